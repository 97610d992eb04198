// Plans, validates and prices a schedule through the installed planner library, and
// reports where the installed preload library is.
#include <iostream>

#include "planner/select.h"
#include "planner/validate.h"

int main() {
  canopy::planner::Problem p;
  p.nranks = 6;
  p.root = 2;
  p.count = 1000;
  p.element_bytes = 8;
  const auto plan = canopy::planner::make_plan(p, {"binomial", 0});
  const bool ok = canopy::planner::validate(plan.schedule).ok && plan.predicted > 0;
  std::cout << "consumer: " << (ok ? "planned and validated" : "FAILED") << "; preload library " << CANOPY_PRELOAD
            << "\n";
  return ok ? 0 : 1;
}
