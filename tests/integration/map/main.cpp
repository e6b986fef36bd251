// Catch2 entry point of map_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
