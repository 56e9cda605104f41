import FuzzSupport

runFuzzer(fuzzPlanSQL)
