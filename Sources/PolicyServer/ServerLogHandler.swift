import Logging

/// The server's log handler: swift-log's `StreamLogHandler` on standard error, with its metadata rendered when a line
/// is written rather than each time it is set.
///
/// `StreamLogHandler` renders its whole metadata into text whenever a key is set, and Hummingbird sets a request id on
/// every request's logger, so every request paid that rendering (the id's text included) though almost no request
/// writes a line: about 2% of the CPU of a decision request (perf, `--decision-log all`, 2026-11-28). This handler keeps
/// the metadata as it is given and hands it to a `StreamLogHandler` only to write a line, so the text is the same,
/// byte for byte, as the stream handler's own.
public struct ServerLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let writer: @Sendable (_ label: String, _ provider: Logger.MetadataProvider?) -> StreamLogHandler

    /// A handler for `label` writing to standard error at `logLevel` and above.
    public init(label: String, metadataProvider: Logger.MetadataProvider?, logLevel: Logger.Level = .info) {
        self.init(label: label, metadataProvider: metadataProvider, logLevel: logLevel) { label, provider in
            StreamLogHandler.standardError(label: label, metadataProvider: provider)
        }
    }

    /// A handler writing through the stream handlers `writer` makes (a test's stream).
    init(
        label: String, metadataProvider: Logger.MetadataProvider?, logLevel: Logger.Level,
        writer: @escaping @Sendable (_ label: String, _ provider: Logger.MetadataProvider?) -> StreamLogHandler
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.logLevel = logLevel
        self.writer = writer
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var stream = writer(label, metadataProvider)
        stream.logLevel = logLevel
        stream.metadata = metadata
        stream.log(event: event)
    }
}
