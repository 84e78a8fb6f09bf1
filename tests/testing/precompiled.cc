// The one source of sparrow_test_pch, the target that precompiles
// tests/testing/precompiled.h for every test binary (CMakeLists.txt).
