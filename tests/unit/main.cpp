// The Catch2 main for edgelock_unit_tests (compiled once, linked into the binary).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
