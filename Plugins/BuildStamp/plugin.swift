import Foundation
import PackagePlugin

/// Writes `BuildStamp.swift` (the git commit the build came from, and when the stamp was made) into the target
/// that uses this plugin, by running the `build-stamp` tool. Its inputs are git's HEAD and the branch ref HEAD
/// names, so the stamp is made again when the commit changes and not on every build. Outside a git checkout
/// (a source archive, a container build without `.git`) the commit reads "unknown".
@main
struct BuildStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let output = context.pluginWorkDirectoryURL.appending(path: "BuildStamp.swift")
        var inputs: [URL] = []
        if let git = GitFiles(root: root) { inputs = git.watched }
        return [
            .buildCommand(
                displayName: "Stamping the build with its git commit",
                executable: try context.tool(named: "build-stamp").url,
                arguments: [root.path(), output.path()],
                inputFiles: inputs,
                outputFiles: [output])
        ]
    }
}

/// The files whose change means a new commit: `.git/HEAD`, and the ref or `packed-refs` it points through.
struct GitFiles {
    var watched: [URL]

    init?(root: URL) {
        var gitDirectory = root.appending(path: ".git")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: gitDirectory.path(), isDirectory: &isDirectory) else { return nil }
        if !isDirectory.boolValue {
            // A worktree: `.git` is a file saying `gitdir: PATH`.
            guard let text = try? String(contentsOf: gitDirectory, encoding: .utf8), text.hasPrefix("gitdir:") else { return nil }
            let path = text.dropFirst("gitdir:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            gitDirectory = path.hasPrefix("/") ? URL(filePath: path) : root.appending(path: path)
        }
        let head = gitDirectory.appending(path: "HEAD")
        watched = [head]
        if let text = try? String(contentsOf: head, encoding: .utf8), text.hasPrefix("ref:") {
            let ref = text.dropFirst("ref:".count).trimmingCharacters(in: .whitespacesAndNewlines)
            let refFile = gitDirectory.appending(path: ref)
            if FileManager.default.fileExists(atPath: refFile.path()) { watched.append(refFile) }
        }
        let packed = gitDirectory.appending(path: "packed-refs")
        if FileManager.default.fileExists(atPath: packed.path()) { watched.append(packed) }
    }
}
