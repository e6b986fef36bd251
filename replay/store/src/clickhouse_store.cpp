// The ClickHouse store: not written yet (issue 28, step 6).
#include "heapman/store/store.h"

namespace heapman::store {

std::unique_ptr<Store> openClickHouse(const std::string& url) {
  throw StoreError("cannot use " + url +
                   ": this heapman does not write to ClickHouse yet; give --store a SQLite file");
}

}  // namespace heapman::store
