// Catch2 entry point of serve_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
