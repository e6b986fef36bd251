// Argument parsing shared by the verbs: one positional LOG plus the verb's own options.
#pragma once

#include <boost/program_options.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "commands.h"

namespace heapman::cli {

namespace po = boost::program_options;

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
