import Foundation
import Testing
import Yams

/// The fuzz targets stay wired up (issue 42): every target `scripts/fuzz.sh` names is declared in Package.swift, has
/// its sources and committed seeds, is linked into the one `gatehouse-fuzz` binary under its name, and runs nightly in .github/workflows/fuzz.yml, which is checked here as GitHub
/// reads it (the workflow cannot run on the Linux builder); `.ci/run` runs the script's smoke step.
@Suite struct FuzzWorkflowTests {
    /// The targets in the script's `targets=(...)` list.
    static func scriptTargets() throws -> [String] {
        let script = try String(contentsOf: root.appendingPathComponent("scripts/fuzz.sh"), encoding: .utf8)
        let start = try #require(script.range(of: "targets=("))
        let end = try #require(script[start.upperBound...].firstIndex(of: ")"))
        return script[start.upperBound..<end].split(whereSeparator: \.isWhitespace).map(String.init)
    }

    @Test func everyTargetHasItsSourcesSeedsAndDeclaration() throws {
        let targets = try Self.scriptTargets()
        #expect(targets.count >= 14)
        let package = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let binary = try String(contentsOf: root.appendingPathComponent("fuzz/Sources/gatehouse-fuzz/main.swift"), encoding: .utf8)
        let packageList = try #require(package.range(of: "let fuzzTargets = [")).upperBound
        let packageTargets = package[packageList...].prefix { $0 != "]" }
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines.union(["\""])) }.filter { !$0.isEmpty }
        #expect(packageTargets == targets, "Package.swift's fuzzTargets, the modules gatehouse-fuzz links, are the script's")
        for target in targets {
            #expect(package.contains("name: \"fuzz-\(target)\""), "Package.swift declares fuzz-\(target)")
            #expect(binary.contains("import fuzz_\(target.replacingOccurrences(of: "-", with: "_"))"), "gatehouse-fuzz imports fuzz-\(target)")
            #expect(binary.contains("\"\(target)\": "), "gatehouse-fuzz runs \(target) by its name")
            let sources = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("fuzz/Sources/fuzz-\(target)").path)) ?? []
            #expect(sources.contains { $0.hasSuffix(".swift") }, "fuzz/Sources/fuzz-\(target) holds the target's sources")
            let seeds = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("fuzz/seeds/\(target)").path)) ?? []
            #expect(!seeds.isEmpty, "fuzz/seeds/\(target) holds seeds")
        }
    }

    /// Every dictionary in fuzz/dicts belongs to a target the script runs (a renamed target would silently lose its
    /// dictionary), and every entry is one libFuzzer reads: a quoted string whose only escapes are `\\`, `\"` and
    /// `\xHH` (a malformed line stops the fuzzer at start-up; the smoke step would catch it, this says where).
    @Test func everyDictionaryBelongsToATargetAndParses() throws {
        let targets = Set(try Self.scriptTargets())
        let folder = root.appendingPathComponent("fuzz/dicts")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".dict") }
        #expect(names.count >= 5)
        let entry = try Regex(#"^"([\x20-\x21\x23-\x5B\x5D-\x7E]|\\\\|\\"|\\x[0-9A-Fa-f]{2})+"$"#)
        for name in names {
            #expect(targets.contains(String(name.dropLast(".dict".count))), "fuzz/dicts/\(name) names no target of scripts/fuzz.sh")
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            var entries = 0
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.isEmpty && !line.hasPrefix("#") {
                #expect(line.wholeMatch(of: entry) != nil, "fuzz/dicts/\(name):\(index + 1): not a libFuzzer dictionary entry: \(line)")
                entries += 1
            }
            #expect(entries >= 10, "fuzz/dicts/\(name) holds \(entries) entries")
        }
    }

    @Test func ciRunsTheSmokeStep() throws {
        let ci = try String(contentsOf: root.appendingPathComponent(".ci/run"), encoding: .utf8)
        #expect(ci.contains("scripts/fuzz.sh --smoke"))
    }

    /// Nightly, each target of the script in the matrix, bounded in time, its corpus cached between runs, findings kept.
    @Test func fuzzWorkflowRunsEveryTargetNightlyWithinBounds() throws {
        let text = try String(contentsOf: root.appendingPathComponent(".github/workflows/fuzz.yml"), encoding: .utf8)
        let workflow = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(Set(workflow.keys).isSubset(of: ["name", "on", "permissions", "jobs", "env", "concurrency", "defaults", "run-name"]))
        let on = try #require(workflow["on"] as? [String: Any])
        let schedule = try #require(on["schedule"] as? [[String: Any]])
        #expect(schedule.contains { ($0["cron"] as? String)?.split(separator: " ").count == 5 })
        let jobs = try #require(workflow["jobs"] as? [String: Any])
        let job = try #require(jobs["fuzz"] as? [String: Any])
        let minutes = try #require(job["timeout-minutes"] as? Int)
        #expect((10...120).contains(minutes))
        #expect((job["runs-on"] as? String)?.hasPrefix("ubuntu-") == true)
        let strategy = try #require(job["strategy"] as? [String: Any])
        let matrix = try #require(strategy["matrix"] as? [String: Any])
        #expect(try #require(matrix["target"] as? [String]) == Self.scriptTargets())
        let steps = try #require(job["steps"] as? [[String: Any]])
        var runs: [String] = []
        var uses: [String: [String: Any]] = [:]
        for step in steps {
            #expect((step["run"] is String) != (step["uses"] is String), "a step runs a command or uses an action: \(step)")
            #expect(Set(step.keys).isSubset(of: ["name", "run", "uses", "with", "env", "if", "id", "shell", "working-directory", "timeout-minutes", "continue-on-error"]))
            if let command = step["run"] as? String { runs.append(command) }
            if let action = step["uses"] as? String { uses[String(action.split(separator: "@")[0])] = step["with"] as? [String: Any] ?? [:] }
        }
        // Fuzzing is bounded (a number of seconds within the job's time) and yields the CPU.
        let fuzz = try #require(runs.first { $0.contains("scripts/fuzz.sh ${{ matrix.target }}") })
        let seconds = try #require(fuzz.split(separator: " ").compactMap { Int($0) }.last { $0 > 19 })
        #expect(seconds > 0 && seconds < minutes * 60 - 600, "fuzzing \(seconds) s leaves time to build within \(minutes) minutes")
        #expect(fuzz.contains("-jobs=1") && fuzz.contains("-workers=1"))
        // The corpus is restored and saved by the cache action, per target.
        let cache = try #require(uses["actions/cache"])
        #expect(cache["path"] as? String == "fuzz/out/${{ matrix.target }}/corpus")
        #expect((cache["key"] as? String)?.contains("${{ matrix.target }}") == true)
        #expect(cache["restore-keys"] != nil)
        #expect(uses["actions/upload-artifact"] != nil)
        #expect(uses["actions/checkout"] != nil)
    }
}
