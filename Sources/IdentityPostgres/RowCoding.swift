import Foundation
import Identity
import PostgresNIO

/// One column value of a stored row, as it is bound to a statement.
enum ColumnValue {
    case text(String)
    case bytes(Data)
    case int(Int)
    case bool(Bool)
    case date(Date)
    case null

    var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    func bind(into binds: inout PostgresBindings) {
        switch self {
        case .text(let v): binds.append(v)
        case .bytes(let v): binds.append(ByteBuffer(bytes: v))
        case .int(let v): binds.append(v)
        case .bool(let v): binds.append(v)
        case .date(let v): binds.append(v)
        case .null: binds.appendNull()
        }
    }
}

enum RowCodingError: Error {
    case unsupported(String)
    case missingKey(String)
}

/// A `StoredRow`'s columns through its `Codable` conformance: the same columns GRDB sees.
enum RowEncoding {
    static func columns<R: StoredRow>(of row: R) throws -> [(name: String, value: ColumnValue)] {
        let encoder = ColumnEncoder()
        try row.encode(to: encoder)
        return encoder.box.columns
    }
}

final class ColumnBox {
    var columns: [(name: String, value: ColumnValue)] = []
}

struct ColumnEncoder: Encoder {
    let box = ColumnBox()
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(ColumnContainer<Key>(box: box))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { fatalError("stored rows are keyed") }
    func singleValueContainer() -> any SingleValueEncodingContainer { fatalError("stored rows are keyed") }
}

struct ColumnContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: ColumnBox
    var codingPath: [any CodingKey] { [] }

    private func put(_ value: ColumnValue, _ key: Key) { box.columns.append((key.stringValue, value)) }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.text(value), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.int(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        switch value {
        case let v as Date: put(.date(v), key)
        case let v as Data: put(.bytes(v), key)
        case let v as Int: put(.int(v), key)
        case let v as Int64: put(.int(Int(v)), key)
        case let v as String: put(.text(v), key)
        case let v as Bool: put(.bool(v), key)
        default: throw RowCodingError.unsupported(key.stringValue)
        }
    }
    // Optionals: a nil is a NULL column (the default would leave the column out, and an update must clear it).
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try value.map { try encode($0, forKey: key) } ?? put(.null, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try value.map { try encode($0, forKey: key) } ?? put(.null, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try value.map { try encode($0, forKey: key) } ?? put(.null, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try value.map { try encode($0, forKey: key) } ?? put(.null, key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        try value.map { try encode($0, forKey: key) } ?? put(.null, key)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws { throw RowCodingError.unsupported(key.stringValue) }
    mutating func encode(_ value: Float, forKey key: Key) throws { throw RowCodingError.unsupported(key.stringValue) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { throw RowCodingError.unsupported(key.stringValue) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.int(Int(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { throw RowCodingError.unsupported(key.stringValue) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        fatalError("stored rows are flat")
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { fatalError("stored rows are flat") }
    mutating func superEncoder() -> any Encoder { fatalError("stored rows are flat") }
    mutating func superEncoder(forKey key: Key) -> any Encoder { fatalError("stored rows are flat") }
}

/// A `StoredRow` (or a `ColumnSelection`) from a result row, column by column by name through its `Decodable`
/// conformance: the order of the result's columns does not matter.
enum RowDecoding {
    static func decode<R: Decodable>(_ type: R.Type, _ row: PostgresRow) throws -> R {
        try R(from: CellDecoder(row: row.makeRandomAccess()))
    }
}

struct CellDecoder: Decoder {
    let row: PostgresRandomAccessRow
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(CellContainer<Key>(row: row))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw RowCodingError.unsupported("unkeyed") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw RowCodingError.unsupported("single value") }
}

struct CellContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let row: PostgresRandomAccessRow
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { row.compactMap { Key(stringValue: $0.columnName) } }

    func contains(_ key: Key) -> Bool { row.contains(key.stringValue) }
    private func cell(_ key: Key) throws -> PostgresCell {
        guard row.contains(key.stringValue) else { throw RowCodingError.missingKey(key.stringValue) }
        return row[key.stringValue]
    }
    func decodeNil(forKey key: Key) throws -> Bool { try cell(key).bytes == nil }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try cell(key).decode(Bool.self) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try cell(key).decode(String.self) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try cell(key).decode(Int.self) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try cell(key).decode(Int64.self) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let cell = try cell(key)
        switch type {
        case is Date.Type: return try cell.decode(Date.self) as! T
        case is Data.Type: return try cell.decode(Data.self) as! T
        case is Int.Type: return try cell.decode(Int.self) as! T
        case is Int64.Type: return try cell.decode(Int64.self) as! T
        case is String.Type: return try cell.decode(String.self) as! T
        case is Bool.Type: return try cell.decode(Bool.self) as! T
        default: throw RowCodingError.unsupported(key.stringValue)
        }
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { throw RowCodingError.unsupported(key.stringValue) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { throw RowCodingError.unsupported(key.stringValue) }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw RowCodingError.unsupported(key.stringValue)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw RowCodingError.unsupported(key.stringValue) }
    func superDecoder() throws -> any Decoder { throw RowCodingError.unsupported("super") }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw RowCodingError.unsupported(key.stringValue) }
}
