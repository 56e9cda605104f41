import Foundation
import NIOCore
import PostgresNIO

/// Array parameters written straight into PostgreSQL's binary array form, for the decision log's batch
/// (`insertDecisionRecords`). postgres-nio's `[String]` encodes each element through its generic `encodeRaw` (about 770
/// instructions an element, callgrind; ten a record) and takes no NULL element; these write each element's length and
/// bytes, and a NULL as the length -1 (about 60 instructions an element).
///
/// The form (PostgreSQL's `array_send`): dimensions (1, or 0 for an empty array), whether an element is NULL, the
/// element type's OID; per dimension its length and lower bound (1); then per element its length in bytes (-1: NULL)
/// and its bytes.
struct PostgresTextArray: PostgresNonThrowingEncodable {
    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    var elements: [String?]

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        writeArrayHeader(count: elements.count, hasNull: elements.contains(nil), element: .text, into: &buffer)
        // The elements in one write of known size: ByteBuffer's checks once, not twice an element (they were about 430
        // instructions an element).
        let size = elements.reduce(0) { $0 + 4 + ($1?.utf8.count ?? 0) }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { out in
            var at = 0
            for element in elements {
                guard var element else {
                    out.storeBytes(of: Int32(-1).bigEndian, toByteOffset: at, as: Int32.self)
                    at += 4
                    continue
                }
                let count = element.utf8.count
                out.storeBytes(of: Int32(count).bigEndian, toByteOffset: at, as: Int32.self)
                at += 4
                element.withUTF8 { bytes in
                    if let base = bytes.baseAddress { (out.baseAddress! + at).copyMemory(from: base, byteCount: bytes.count) }
                }
                at += count
            }
            return at
        }
    }
}

/// A `timestamptz[]` parameter: each time as postgres-nio's `Date` writes one (whole microseconds since 2000-01-01,
/// truncated toward zero), so a batch stores the times a row insert does.
struct PostgresTimestampArray: PostgresNonThrowingEncodable {
    static var psqlType: PostgresDataType { .timestamptzArray }
    static var psqlFormat: PostgresFormat { .binary }

    var elements: [Date]

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        writeArrayHeader(count: elements.count, hasNull: false, element: .timestamptz, into: &buffer)
        for element in elements {
            buffer.writeInteger(8, as: Int32.self)
            buffer.writeInteger(Int64(element.timeIntervalSince(Self.epoch) * 1_000_000))
        }
    }

    /// PostgreSQL's epoch, 2000-01-01 00:00:00 UTC.
    private static let epoch = Date(timeIntervalSince1970: 946_684_800)
}

private func writeArrayHeader(count: Int, hasNull: Bool, element: PostgresDataType, into buffer: inout ByteBuffer) {
    buffer.writeInteger(count == 0 ? 0 : 1, as: Int32.self)
    buffer.writeInteger(hasNull ? 1 : 0, as: Int32.self)
    buffer.writeInteger(element.rawValue)
    guard count > 0 else { return }
    buffer.writeInteger(Int32(count))
    buffer.writeInteger(1, as: Int32.self)
}
