//! `--data FILE`: CSV and JSON Lines files read into a `DataFile`, their cells, their errors and
//! the memory they hold. Every file is written to a fresh directory under the system's temp dir.

use loadbench_plan::{DataFile, DataFormat, PlanError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A directory of its own under the temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "loadbench-data-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Writes `name` with `content` and returns its path.
    fn file(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every cell of the file, row by row, as text.
fn table(data: &DataFile) -> Vec<Vec<String>> {
    (0..data.rows())
        .map(|r| {
            (0..data.columns().len())
                .map(|c| String::from_utf8(data.cell(r, c).to_vec()).unwrap())
                .collect()
        })
        .collect()
}

fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
    cells
        .iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

/// The error's one line, checked to be one line that names `--data FILE`.
fn error(result: Result<DataFile, PlanError>, path: &Path) -> String {
    let PlanError::Invalid(text) = result.expect_err("the file should be refused");
    assert!(!text.contains('\n'), "more than one line: {text}");
    let named = format!("--data {}", path.display());
    assert!(text.contains(&named), "does not name {named}: {text}");
    text
}

fn assert_has(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

#[test]
fn csv_quoted_fields_keep_commas_quotes_and_newlines() {
    let dir = TempDir::new();
    let path = dir.file(
        "users.csv",
        "id,name,note\r\n\
         1,\"Smith, J\",\"line one\nline two\"\r\n\
         2,\"say \"\"hi\"\"\",\r\n\
         3,plain,\"\"\r\n\
         \r\n",
    );
    let data = DataFile::load(&path).unwrap();
    assert_eq!(data.format(), DataFormat::Csv);
    assert_eq!(data.path(), path);
    assert_eq!(data.columns(), ["id", "name", "note"]);
    assert_eq!(data.rows(), 3);
    assert_eq!(
        table(&data),
        rows(&[
            &["1", "Smith, J", "line one\nline two"],
            &["2", "say \"hi\"", ""],
            &["3", "plain", ""],
        ])
    );
}

#[test]
fn csv_bom_is_dropped_and_header_names_trimmed() {
    let dir = TempDir::new();
    let plain = dir.file("bom.csv", "\u{feff}id , name\n7,  x \n");
    let data = DataFile::load(&plain).unwrap();
    assert_eq!(data.columns(), ["id", "name"]);
    // Only the names are trimmed: a cell keeps its spaces.
    assert_eq!(table(&data), rows(&[&["7", "  x "]]));

    let quoted = dir.file("bom-quoted.csv", "\u{feff}\"id\",\"a,b\"\n1,2");
    let data = DataFile::load(&quoted).unwrap();
    assert_eq!(data.columns(), ["id", "a,b"]);
    assert_eq!(table(&data), rows(&[&["1", "2"]]));
}

#[test]
fn csv_cells_may_hold_any_bytes() {
    let dir = TempDir::new();
    let path = dir.file("bytes.csv", b"k\n\xff\xfe\n");
    let data = DataFile::load(&path).unwrap();
    assert_eq!(data.cell(0, 0), b"\xff\xfe");
}

#[test]
fn json_lines_values_become_cell_text_in_the_first_objects_key_order() {
    let dir = TempDir::new();
    let path = dir.file(
        "rows.jsonl",
        concat!(
            r#"{"zeta": "a \"quoted\" \u00e9 line\nnext", "alpha": 42, "mid": null, "list": [1, "x", {"b": 1, "a": 2}], "flag": true}"#,
            "\r\n\n   \n",
            r#"{"flag": false, "list": {}, "mid": "m", "alpha": -1.5e3, "zeta": ""}"#,
            "\n",
        ),
    );
    let data = DataFile::load(&path).unwrap();
    assert_eq!(data.format(), DataFormat::JsonLines);
    assert_eq!(data.columns(), ["zeta", "alpha", "mid", "list", "flag"]);
    assert_eq!(
        table(&data),
        rows(&[
            &[
                "a \"quoted\" é line\nnext",
                "42",
                "",
                r#"[1,"x",{"a":2,"b":1}]"#,
                "true"
            ],
            &["", "-1500.0", "m", "{}", "false"],
        ])
    );
}

#[test]
fn ndjson_extension_and_load_as_choose_the_format() {
    let dir = TempDir::new();
    let nd = dir.file("rows.NDJSON", "{\"a\": \"1\"}\n");
    assert_eq!(DataFile::load(&nd).unwrap().format(), DataFormat::JsonLines);
    // A CSV under another name, read as CSV on request.
    let txt = dir.file("rows.txt", "a,b\n1,2\n");
    let data = DataFile::load_as(&txt, DataFormat::Csv).unwrap();
    assert_eq!(table(&data), rows(&[&["1", "2"]]));
}

#[test]
fn column_lookup_and_the_missing_column_line() {
    let dir = TempDir::new();
    let path = dir.file("users.csv", "id,Name,email\n1,a,a@x\n");
    let data = DataFile::load(&path).unwrap();
    assert_eq!(data.column("id"), Some(0));
    assert_eq!(data.column("email"), Some(2));
    assert_eq!(data.column("name"), None);
    assert_eq!(data.column("mail"), None);

    let text = data.no_such_column("mail");
    assert!(!text.contains('\n'), "{text}");
    assert_has(
        &text,
        &[
            &format!("--data {}", path.display()),
            "no column \"mail\"",
            "its columns: id, Name, email",
            "{{row.NAME}}",
            "add the column to the header line",
        ],
    );
    assert!(!text.contains("did you mean"), "{text}");
    let text = data.no_such_column("name");
    assert_has(&text, &["no column \"name\"", "did you mean \"Name\"?"]);
}

#[test]
fn a_long_column_list_is_cut_short() {
    let dir = TempDir::new();
    let names: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
    let path = dir.file(
        "wide.csv",
        format!("{}\n{}\n", names.join(","), vec!["v"; 20].join(",")),
    );
    let data = DataFile::load(&path).unwrap();
    let text = data.no_such_column("nope");
    assert_has(&text, &["c0, c1, c2, c3, c4, c5, c6, c7, … (20 in all)"]);
    assert!(!text.contains("c8"), "{text}");
}

#[test]
fn a_cell_out_of_range_panics_instead_of_reading_another_row() {
    let dir = TempDir::new();
    let path = dir.file("two.csv", "a,b\n1,2\n3,4\n");
    let data = DataFile::load(&path).unwrap();
    assert_eq!(data.cell(1, 1), b"4");
    // (0, 2) would be (1, 0) if the column were not checked.
    for (row, col) in [(0, 2), (2, 0), (usize::MAX, 1)] {
        let outcome = std::panic::catch_unwind(|| data.cell(row, col).to_vec());
        let message = outcome.expect_err("an out-of-range cell should panic");
        let text = message.downcast_ref::<String>().unwrap();
        assert!(text.contains("out of range"), "({row}, {col}): {text}");
    }
}

#[test]
fn a_missing_file_names_the_os_error_and_the_fix() {
    let dir = TempDir::new();
    let path = dir.0.join("absent.csv");
    let text = error(DataFile::load(&path), &path);
    assert_has(
        &text,
        &[
            "cannot read --data",
            "No such file or directory",
            "check the path",
        ],
    );
}

/// Writes each file, loads it, and checks that it is refused with one line holding every part.
fn assert_refused(cases: &[(&str, &[u8], &[&str])]) {
    let dir = TempDir::new();
    for (name, content, parts) in cases {
        let path = dir.file(name, content);
        let text = error(DataFile::load(&path), &path);
        assert_has(&text, parts);
    }
}

#[test]
fn an_unknown_or_missing_extension_names_the_known_ones() {
    assert_refused(&[
        (
            "rows.txt",
            b"a\n1\n",
            &["unknown extension .txt", ".csv", ".jsonl", ".ndjson"],
        ),
        ("rows", b"a\n1\n", &["has no extension", ".csv", ".jsonl"]),
    ]);
}

#[test]
fn empty_files_are_refused() {
    assert_refused(&[
        ("empty.csv", b"", &["is empty:", "write a header line"]),
        ("bom-only.csv", b"\xEF\xBB\xBF", &["is empty:"]),
        ("blank.csv", b"\n\n", &["is empty:"]),
        (
            "empty.jsonl",
            b"",
            &["is empty:", "one JSON object per line"],
        ),
        ("blank.jsonl", b"\n  \n", &["is empty:"]),
    ]);
}

#[test]
fn a_header_without_rows_is_refused() {
    let dir = TempDir::new();
    let path = dir.file("head.csv", "id,name\n\n");
    let text = error(DataFile::load(&path), &path);
    assert_eq!(
        text,
        format!(
            "--data {} has a header but no rows: add rows below the header",
            path.display()
        )
    );
}

#[test]
fn a_row_with_another_field_count_names_its_line() {
    assert_refused(&[
        (
            // The quoted newline makes row 2 span lines 3-4; the short row starts on line 5.
            "short.csv",
            b"id,name,email,age\n1,a,a@x,3\n2,\"b\nc\",b@x,4\n3,c,c@x\n",
            &[
                "line 5: 3 fields where the header has 4 (id, name, email, age)",
                "give every row 4 fields",
                "quote a field that holds a comma",
            ],
        ),
        (
            "long.csv",
            b"a,b\n1,2,3\n",
            &["line 2: 3 fields where the header has 2 (a, b)"],
        ),
    ]);
}

#[test]
fn bad_header_names_are_refused_with_their_column() {
    assert_refused(&[
        (
            "empty-name.csv",
            b"id,  ,email\n1,2,3\n",
            &["header column 2 has no name", "give every column a name"],
        ),
        (
            "dup.csv",
            b"id,name, id\n1,2,3\n",
            &[
                "header column 3 is named \"id\" like column 1",
                "rename one",
            ],
        ),
        (
            "latin1.csv",
            b"id,caf\xe9\n1,2\n",
            &["header column 2 is not UTF-8", "save the file as UTF-8"],
        ),
    ]);
}

#[test]
fn json_lines_that_are_not_objects_or_not_json_name_their_line() {
    assert_refused(&[
        (
            "array.jsonl",
            b"{\"a\": 1}\n\n[1, 2]\n",
            &[
                "line 3 is not a JSON object (it starts with '[')",
                "one object per line",
            ],
        ),
        (
            "broken.jsonl",
            b"{\"a\": 1}\n{\"a\": }\n",
            &[
                "line 2 is not valid JSON (expected value, column 7)",
                "one JSON object per line",
            ],
        ),
        (
            "two.jsonl",
            b"{\"a\": 1} {\"a\": 2}\n",
            &["line 1 is not valid JSON (trailing characters"],
        ),
        (
            "empty-object.jsonl",
            b"\n{}\n",
            &["line 2 is an empty object", "at least one"],
        ),
    ]);
}

#[test]
fn json_lines_must_all_have_the_first_lines_keys_and_no_others() {
    assert_refused(&[
        (
            "missing.jsonl",
            b"{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2}\n",
            &[
                "line 2 lacks the key \"name\" (columns: id, name)",
                "exactly the first line's keys",
            ],
        ),
        (
            "extra.jsonl",
            b"{\"id\": 1}\n{\"id\": 2}\n{\"id\": 3, \"x\": 0}\n",
            &[
                "line 3 has the key \"x\" that the first line lacks (columns: id)",
                "exactly the first line's keys",
            ],
        ),
        (
            "twice.jsonl",
            b"{\"id\": 1, \"id\": 2}\n",
            &["line 1 has the key \"id\" twice", "keep one"],
        ),
    ]);
}

#[test]
fn a_file_over_4_gib_is_refused_before_it_is_read() {
    let dir = TempDir::new();
    let path = dir.0.join("huge.csv");
    // Sparse: no disk blocks are written, and the size check comes before any read.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(5 << 30)
        .unwrap();
    let text = error(DataFile::load(&path), &path);
    assert_has(
        &text,
        &["is 5.0 GiB", "over the limit of 4.0 GiB", "split it"],
    );
}

#[test]
fn memory_stays_about_the_files_size() {
    let dir = TempDir::new();
    let mut content = String::from("id,name,email\n");
    for i in 0..100_000 {
        content.push_str(&format!("{i},user{i},user{i}@example.com\n"));
    }
    let path = dir.file("big.csv", &content);
    let data = DataFile::load(&path).unwrap();
    assert_eq!(data.rows(), 100_000);
    let last = data.rows() - 1;
    assert_eq!(data.cell(last, 2), b"user99999@example.com");
    assert_eq!(data.cell(1234, 1), b"user1234");
    let size = content.len();
    let held = data.heap_bytes();
    assert!(
        held <= 2 * size + 4096,
        "holds {held} bytes for a {size}-byte file"
    );
    // And at least the cells themselves: heap_bytes is not a made-up figure.
    assert!(held >= size - 100_000 * 3, "holds {held} bytes");
}
