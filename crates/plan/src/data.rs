//! A data file (`--data FILE`): a table whose rows feed per-request values (`{{row.NAME}}`, a
//! column of the current row). Read once, before any load starts, into a compact form: every
//! cell's bytes in one buffer plus one `u32` offset per cell, so a file of N bytes holds about
//! N bytes of memory and [`DataFile::cell`] is two loads and a slice.
//!
//! Two formats: CSV (RFC 4180, the first line is the header) and JSON Lines (one object per
//! line; the first object's keys, in its order, are the columns). Every mistake is one line
//! naming the file, the line or column, and the fix.

use crate::{invalid, PlanError};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// How many column names an error lists before it cuts the list short.
const NAMES_LISTED: usize = 8;

/// Bytes read from the file at a time.
const READ_BUFFER: usize = 64 * 1024;

/// The UTF-8 byte order mark some editors put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The format of a data file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFormat {
    /// RFC 4180 CSV: the first line is the header naming the columns (names trimmed; a UTF-8
    /// byte order mark before it is dropped); every later line is a row with as many fields.
    Csv,
    /// JSON Lines (`.jsonl`, `.ndjson`): one JSON object per non-empty line; the first
    /// object's keys, in the order written, are the columns, and every later object must
    /// have exactly those keys.
    JsonLines,
}

impl DataFormat {
    /// The format a file's extension names (case-insensitive): `.csv` is CSV, `.jsonl` and
    /// `.ndjson` JSON Lines; anything else is an error naming those extensions.
    fn from_path(path: &Path) -> Result<DataFormat, PlanError> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        match ext.as_deref() {
            Some("csv") => Ok(DataFormat::Csv),
            Some("jsonl" | "ndjson") => Ok(DataFormat::JsonLines),
            other => {
                let what = match other {
                    Some(e) => format!("has the unknown extension .{e}"),
                    None => "has no extension".to_string(),
                };
                Err(invalid(format!(
                    "--data {} {what}: name it .csv (a header line, then rows) or .jsonl / \
                     .ndjson (one JSON object per line)",
                    path.display()
                )))
            }
        }
    }
}

/// A data file read into memory: its columns and, for every row, every column's bytes.
///
/// Cells are bytes as the file holds them (a CSV field unquoted; a JSON string unescaped, a
/// number or boolean as its JSON text, `null` empty, an array or object as compact JSON with
/// the keys of nested objects sorted). Only the header must be UTF-8; cells may hold any bytes.
#[derive(Clone)]
pub struct DataFile {
    path: PathBuf,
    format: DataFormat,
    columns: Vec<String>,
    rows: usize,
    /// Every cell's bytes, row after row, column after column.
    data: Vec<u8>,
    /// Cell `i` is `data[offsets[i]..offsets[i + 1]]`; `offsets[0]` is 0.
    offsets: Vec<u32>,
}

impl fmt::Debug for DataFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataFile")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("columns", &self.columns)
            .field("rows", &self.rows)
            .field("data_bytes", &self.data.len())
            .finish()
    }
}

impl DataFile {
    /// Reads the file; the format from the extension: `.csv` is [`DataFormat::Csv`], `.jsonl`
    /// and `.ndjson` are [`DataFormat::JsonLines`] (case-insensitive); anything else is an
    /// error naming those extensions.
    pub fn load(path: &Path) -> Result<DataFile, PlanError> {
        DataFile::load_as(path, DataFormat::from_path(path)?)
    }

    /// Reads the file as `format`, whatever its extension. Refuses a missing or unreadable
    /// file, an empty one, one over 4 GiB, one with no rows, and any row that does not match
    /// the columns, each with one line naming the file, the line and the fix.
    pub fn load_as(path: &Path, format: DataFormat) -> Result<DataFile, PlanError> {
        let cannot_read = |e: std::io::Error| {
            invalid(format!(
                "cannot read --data {}: {e}; check the path and its permissions",
                path.display()
            ))
        };
        let file = crate::InputFile::DATA.open(path)?;
        let size = file.metadata().map_err(cannot_read)?.len();
        let mut input = BufReader::with_capacity(READ_BUFFER, file);
        skip_bom(&mut input).map_err(cannot_read)?;
        let mut out = DataFile {
            path: path.to_path_buf(),
            format,
            columns: Vec::new(),
            rows: 0,
            data: Vec::new(),
            offsets: vec![0],
        };
        match format {
            DataFormat::Csv => out.read_csv(input, size)?,
            DataFormat::JsonLines => out.read_json_lines(input)?,
        }
        out.data.shrink_to_fit();
        out.offsets.shrink_to_fit();
        Ok(out)
    }

    /// The file as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format it was read as.
    pub fn format(&self) -> DataFormat {
        self.format
    }

    /// The column names: the header's order (CSV) or the first object's key order (JSON
    /// Lines). Never empty, no two alike.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The index of the column named `name` (exact match), for [`DataFile::cell`].
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// How many rows it holds (at least one; a CSV header is not a row).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The bytes of column `col` in row `row`. No allocation; panics, like a slice index, only
    /// when `row >= rows()` or `col >= columns().len()`.
    #[inline]
    pub fn cell(&self, row: usize, col: usize) -> &[u8] {
        let width = self.columns.len();
        assert!(
            row < self.rows && col < width,
            "cell ({row}, {col}) out of range: the data file has {} rows of {width} columns",
            self.rows
        );
        let i = row * width + col;
        let start = self.offsets[i] as usize;
        let end = self.offsets[i + 1] as usize;
        &self.data[start..end]
    }

    /// The heap memory it holds, in bytes: the cells, their offsets, the names and the path.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity()
            + self.offsets.capacity() * std::mem::size_of::<u32>()
            + self.columns.capacity() * std::mem::size_of::<String>()
            + self.columns.iter().map(String::capacity).sum::<usize>()
            + self.path.capacity()
    }

    /// Error text for a column that is not in the file: one line naming the file, the missing
    /// name, the columns it has and the fix.
    pub fn no_such_column(&self, name: &str) -> String {
        let hint = match self.columns.iter().find(|c| c.eq_ignore_ascii_case(name)) {
            Some(c) => format!(" (did you mean \"{c}\"? names are case-sensitive)"),
            None => String::new(),
        };
        let holder = match self.format {
            DataFormat::Csv => "the header line",
            DataFormat::JsonLines => "every line's object",
        };
        format!(
            "--data {} has no column \"{name}\"{hint}; its columns: {}: use one of those \
             names in {{{{row.NAME}}}}, or add the column to {holder}",
            self.path.display(),
            list_names(&self.columns)
        )
    }

    /// Ends the current cell: its bytes are already at the end of `data`.
    fn end_cell(&mut self) -> Result<(), PlanError> {
        let end = u32::try_from(self.data.len()).map_err(|_| {
            invalid(format!(
                "--data {} holds more than 4 GiB of values: split it or keep fewer rows",
                self.path.display()
            ))
        })?;
        self.offsets.push(end);
        Ok(())
    }

    fn err(&self, what: impl fmt::Display) -> PlanError {
        invalid(format!("--data {} {what}", self.path.display()))
    }

    fn no_rows(&self) -> PlanError {
        self.err("is empty: write a header line naming the columns, then one row per line")
    }

    fn read_csv(&mut self, input: impl Read, size: u64) -> Result<(), PlanError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .buffer_capacity(READ_BUFFER)
            .from_reader(input);
        let mut record = csv::ByteRecord::new();
        if !self.read_record(&mut reader, &mut record)? {
            return Err(self.no_rows());
        }
        self.read_header(&record)?;
        // The cells never hold more bytes than the file: one allocation, no growth.
        self.data.reserve_exact(usize::try_from(size).unwrap_or(0));
        let width = self.columns.len();
        while self.read_record(&mut reader, &mut record)? {
            if record.len() != width {
                let line = record.position().map_or(0, csv::Position::line);
                return Err(self.err(format_args!(
                    "line {line}: {} fields where the header has {width} ({}): give every row \
                     {width} fields, and quote a field that holds a comma (\"a,b\")",
                    record.len(),
                    list_names(&self.columns)
                )));
            }
            for field in &record {
                self.data.extend_from_slice(field);
                self.end_cell()?;
            }
            self.rows += 1;
        }
        if self.rows == 0 {
            return Err(self.err("has a header but no rows: add rows below the header"));
        }
        Ok(())
    }

    /// Reads the next record; `false` at the end of the file.
    fn read_record<R: Read>(
        &self,
        reader: &mut csv::Reader<R>,
        record: &mut csv::ByteRecord,
    ) -> Result<bool, PlanError> {
        reader.read_byte_record(record).map_err(|e| {
            invalid(format!(
                "cannot read --data {}: {e}; check the file",
                self.path.display()
            ))
        })
    }

    fn read_header(&mut self, record: &csv::ByteRecord) -> Result<(), PlanError> {
        for (i, field) in record.iter().enumerate() {
            let number = i + 1;
            let Ok(name) = std::str::from_utf8(field) else {
                return Err(self.err(format_args!(
                    "header column {number} is not UTF-8: save the file as UTF-8"
                )));
            };
            self.add_column(name.trim(), &format!("header column {number}"))?;
        }
        Ok(())
    }

    /// Adds a column named `name`, refusing an empty or repeated name; `what` says where it
    /// was written.
    fn add_column(&mut self, name: &str, what: &str) -> Result<(), PlanError> {
        if name.is_empty() {
            return Err(self.err(format_args!(
                "{what} has no name: give every column a name (used as {{{{row.NAME}}}})"
            )));
        }
        if let Some(first) = self.column(name) {
            return Err(self.err(format_args!(
                "{what} is named \"{name}\" like column {}: rename one of them",
                first + 1
            )));
        }
        self.columns.push(name.to_string());
        Ok(())
    }

    fn read_json_lines(&mut self, mut input: impl BufRead) -> Result<(), PlanError> {
        let mut line = Vec::new();
        let mut slots: Vec<Option<Value>> = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            let n = input.read_until(b'\n', &mut line).map_err(|e| {
                invalid(format!(
                    "cannot read --data {}: {e}; check the file",
                    self.path.display()
                ))
            })?;
            if n == 0 {
                break;
            }
            number += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let object = self.parse_object(&line, number)?;
            if self.columns.is_empty() {
                self.first_object(&object, number)?;
                slots.resize(self.columns.len(), None);
            }
            self.fill_slots(object, &mut slots, number)?;
            for slot in &mut slots {
                let value = slot.take().unwrap_or(Value::Null);
                write_cell(&mut self.data, &value);
                self.end_cell()?;
            }
            self.rows += 1;
        }
        if self.rows == 0 {
            return Err(self.err(
                "is empty: write one JSON object per line, such as {\"id\": 1, \"name\": \"a\"}",
            ));
        }
        Ok(())
    }

    /// Parses one line as a JSON object, its keys in the order written.
    fn parse_object(&self, line: &[u8], number: u64) -> Result<Vec<(String, Value)>, PlanError> {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            let shown = first.map_or('?', |&b| char::from(b));
            return Err(self.err(format_args!(
                "line {number} is not a JSON object (it starts with '{shown}'): write one \
                 object per line, such as {{\"id\": 1, \"name\": \"a\"}}"
            )));
        }
        let mut de = serde_json::Deserializer::from_slice(line);
        let parsed = OrderedObject.deserialize(&mut de).and_then(|o| {
            de.end()?;
            Ok(o)
        });
        parsed.map_err(|e| {
            let text = e.to_string();
            let message = text.rsplit_once(" at line ").map_or(&*text, |(m, _)| m);
            match message.strip_prefix(DUPLICATE_KEY) {
                Some(key) => self.err(format_args!(
                    "line {number} has the key {key} twice: keep one of them"
                )),
                None => self.err(format_args!(
                    "line {number} is not valid JSON ({message}, column {}): write one JSON \
                     object per line",
                    e.column()
                )),
            }
        })
    }

    /// Takes the first object's keys as the columns.
    fn first_object(&mut self, object: &[(String, Value)], number: u64) -> Result<(), PlanError> {
        for (key, _) in object {
            self.add_column(key, &format!("line {number}: a key"))?;
        }
        if self.columns.is_empty() {
            return Err(self.err(format_args!(
                "line {number} is an empty object: its keys name the columns, so give it at \
                 least one, such as {{\"id\": 1}}"
            )));
        }
        Ok(())
    }

    /// Puts each value of `object` in its column's slot; every column must be there, and
    /// nothing else.
    fn fill_slots(
        &self,
        object: Vec<(String, Value)>,
        slots: &mut [Option<Value>],
        number: u64,
    ) -> Result<(), PlanError> {
        for (key, value) in object {
            let Some(col) = self.column(&key) else {
                return Err(self.err(format_args!(
                    "line {number} has the key \"{key}\" that the first line lacks (columns: \
                     {}): give every line exactly the first line's keys",
                    list_names(&self.columns)
                )));
            };
            slots[col] = Some(value);
        }
        if let Some(col) = slots.iter().position(Option::is_none) {
            return Err(self.err(format_args!(
                "line {number} lacks the key \"{}\" (columns: {}): give every line exactly \
                 the first line's keys (null for an empty value)",
                self.columns[col],
                list_names(&self.columns)
            )));
        }
        Ok(())
    }
}

/// Drops a UTF-8 byte order mark at the start of `input`.
fn skip_bom(input: &mut impl BufRead) -> std::io::Result<()> {
    if input.fill_buf()?.starts_with(BOM) {
        input.consume(BOM.len());
    }
    Ok(())
}

/// Appends a JSON value's cell bytes: a string unescaped, `null` nothing, anything else its
/// compact JSON text.
fn write_cell(data: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(s) => data.extend_from_slice(s.as_bytes()),
        Value::Null => {}
        // Writing a Value into a Vec cannot fail (no I/O, keys are strings).
        other => serde_json::to_writer(&mut *data, other).expect("a JSON value writes"),
    }
}

/// The names, comma-separated, cut short after [`NAMES_LISTED`].
fn list_names(names: &[String]) -> String {
    let mut out = names
        .iter()
        .take(NAMES_LISTED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_LISTED {
        out.push_str(&format!(", … ({} in all)", names.len()));
    }
    out
}

/// The start of the parse error for a key written twice in one object.
const DUPLICATE_KEY: &str = "duplicate key ";

/// Deserializes a JSON object into its entries in the order written (serde_json's own map
/// sorts them), refusing a repeated key.
struct OrderedObject;

impl<'de> DeserializeSeed<'de> for OrderedObject {
    type Value = Vec<(String, Value)>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for OrderedObject {
    type Value = Vec<(String, Value)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(String, Value)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            if out.iter().any(|(k, _)| *k == key) {
                return Err(A::Error::custom(format_args!("{DUPLICATE_KEY}\"{key}\"")));
            }
            out.push((key, value));
        }
        Ok(out)
    }
}
