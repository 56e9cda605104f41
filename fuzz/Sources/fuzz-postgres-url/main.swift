import FuzzSupport

runFuzzer(fuzzPostgresURL)
