// Fixture of PassList.*: two registrations, as pass files write them.
STRATA_REGISTER_PASS(Alpha, Alpha)

STRATA_REGISTER_NAMED_PASS(Beta, "beta-pass", [](ir::IRModule m, const PassContext& context) {
  return Beta(std::move(m), context.target);
})
