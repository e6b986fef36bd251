// Catch2 entry point of logformat_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
