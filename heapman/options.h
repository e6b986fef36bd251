// Option values and the parsed options the verbs read (verbs.h declares and parses them).
#pragma once

#include <boost/program_options.hpp>
#include <charconv>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"

namespace heapman::cli {

namespace po = boost::program_options;

// A count option's value (--top N): a whole number, 0 or more. Boost reads "-1" into a size_t
// as 2^64 - 1, which a verb would take as "every row"; a Count refuses anything but digits.
struct Count {
  size_t n = 0;
};

// Boost.Program_options finds this through Count (po::value<Count>()).
inline void validate(boost::any& v, const std::vector<std::string>& values, Count*, int) {
  po::validators::check_first_occurrence(v);
  const std::string& s = po::validators::get_single_string(values);
  size_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || s[0] == '+' || ec != std::errc() || end != s.data() + s.size()) {
    po::error_with_option_name e("'%value%' is not a count for option '%canonical_option%': "
                                 "give a whole number, 0 or more (0: no limit)");
    e.set_substitute("value", s);
    throw e;
  }
  v = Count{n};
}

// The options of one command, as Boost parsed them, remembering which ones the verb looked at.
// The verbs take this instead of a po::variables_map (whose count() and operator[] these hide),
// so that with HEAPMAN_CHECK_OPTIONS set an option that was given but never read is reported:
// the verb ignored it (tests/integration/verb_options_test.py runs every verb so).
class VerbOptions : public po::variables_map {
 public:
  size_type count(const std::string& name) const {
    read_.insert(name);
    return po::variables_map::count(name);
  }
  const po::variable_value& operator[](const std::string& name) const {
    read_.insert(name);
    return po::variables_map::operator[](name);
  }
  // Given on the command line (not a default), without counting as read: for the parser.
  bool given(const std::string& name) const {
    auto it = find(name);
    return it != end() && !it->second.defaulted();
  }
  // Options given on the command line (not defaults) that nothing has read, but help.
  std::vector<std::string> unread() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : static_cast<const po::variables_map&>(*this))
      if (!value.defaulted() && name != "help" && !read_.count(name)) out.push_back(name);
    return out;
  }

 private:
  mutable std::set<std::string> read_;
};

}  // namespace heapman::cli
