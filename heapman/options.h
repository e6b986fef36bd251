// Argument parsing shared by the verbs: one positional LOG plus the verb's own options.
#pragma once

#include <boost/program_options.hpp>
#include <charconv>
#include <cstdio>
#include <exception>
#include <iostream>
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

// Parses args into vm. Returns kExitOk to go on, or an exit code (after printing help/errors).
inline int parseArgs(const char* verb, const char* synopsis, po::options_description& opts,
                     const Args& args, po::variables_map& vm) {
  opts.add_options()("help,h", "show this help")("log", po::value<std::string>(), "log file");
  po::positional_options_description pos;
  pos.add("log", 1);
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heapman %s: %s\nusage: heapman %s %s\n", verb, e.what(), verb, synopsis);
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::printf("usage: heapman %s %s\n", verb, synopsis);
    opts.print(std::cout);
    return -1;
  }
  if (!vm.count("log")) {
    std::fprintf(stderr, "heapman %s: no log given\nusage: heapman %s %s\n", verb, verb, synopsis);
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace heapman::cli
