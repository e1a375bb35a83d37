// Fixture of PassList.*: an id two_passes.cc already took.
STRATA_REGISTER_PASS(Alpha, AnotherAlpha)
