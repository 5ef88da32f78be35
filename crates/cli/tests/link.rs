//! The linker driver (crates/cli/link/cc): only for the loadbench executable, it links glibc
//! statically and lays the listed functions and data out first, in the list's order, matching
//! names as rustc's symbols change between builds; every other link is plain cc. Checked on
//! real links with lld (the one rustc uses), of C functions named like Rust's symbols, and by
//! running what they made.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::tempdir;

const C: &str = r#"
#include <netdb.h>
#include <string.h>
const int table_cold[1024] = {1};
const int table_hot[1024] = {2};
const int table_lto[1024] __asm__("table_lto.llvm.777");
const int table_lto[1024] = {0};
void first(void) {}
void a_plain(void) {}
void b_lto(void) __asm__("b_lto.llvm.12345");
void b_lto(void) {}
void c_hashed(void) __asm__("_ZN4demo5hello17h0123456789abcdefE");
void c_hashed(void) {}
void d_twice_1(void) __asm__("_ZN4demo3two17h1111111111111111E");
void d_twice_1(void) {}
void d_twice_2(void) __asm__("_ZN4demo3two17h2222222222222222E");
void d_twice_2(void) {}
void last(void) {}
/* Exits 0 when "localhost" resolves: a static glibc's name lookup works. */
int main(void) {
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo("localhost", "80", &hints, &res) != 0) return 3;
    freeaddrinfo(res);
    return table_cold[0] + table_hot[0] + table_lto[0] == 3 ? 0 : 4;
}
"#;

/// A library that exists only as a shared object: no static link can use it.
const SHARED_ONLY: &str = "int shared_only(void) { return 0; }\n";

/// The list: in this order, a name this build does not have, one with another hash (a new
/// toolchain), one whose name is shared by two functions (then not guessed), one LTO renamed.
/// And data: tables the run reads (one LTO renamed), named before one it does not.
const LIST: &str = "last\nnot_in_this_build\n_ZN4demo5hello17hffffffffffffffffE\n\
                    _ZN4demo3two17hffffffffffffffffE\nb_lto\na_plain\ntable_lto\ntable_hot\n";

fn gcc_ld() -> PathBuf {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = String::from_utf8(sysroot.stdout).unwrap();
    Path::new(sysroot.trim()).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld")
}

/// How a link came out: its symbols' addresses by name (code and read-only data), and
/// whether it asks for a program interpreter (is dynamically linked).
struct Linked {
    path: PathBuf,
    code: Vec<(u64, String)>,
    data: Vec<(u64, String)>,
    dynamic: bool,
}

/// Links `objects` (and `extra` arguments) through the driver into `dir/name`, with lld when
/// `lld`, and `LOADBENCH_LINK` set to `link` when given.
fn link(
    dir: &Path,
    objects: &[&Path],
    extra: &[&str],
    name: &str,
    lld: bool,
    link: Option<&str>,
) -> Linked {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/cc");
    let out = dir.join(name);
    let mut cmd = Command::new(driver);
    if lld {
        cmd.arg("-fuse-ld=lld").arg("-B").arg(gcc_ld());
    }
    if let Some(l) = link {
        cmd.env("LOADBENCH_LINK", l);
    } else {
        cmd.env_remove("LOADBENCH_LINK");
    }
    let status = cmd
        .args(objects)
        .args(extra)
        .arg("-o")
        .arg(&out)
        .env("LOADBENCH_HOT_FUNCTIONS", dir.join("hot.txt"))
        .status()
        .unwrap();
    assert!(status.success(), "linking {name}");
    let nm = Command::new("nm").arg("-n").arg(&out).output().unwrap();
    let symbols: Vec<(u64, char, String)> = String::from_utf8(nm.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let kind = f.get(1)?.chars().next()?.to_ascii_lowercase();
            (f.len() == 3).then(|| (u64::from_str_radix(f[0], 16).unwrap(), kind, f[2].into()))
        })
        .collect();
    let of = |kind: char| {
        symbols
            .iter()
            .filter(|s| s.1 == kind)
            .map(|(a, _, n)| (*a, n.clone()))
            .collect()
    };
    Linked {
        code: of('t'),
        data: of('r'),
        dynamic: has_interpreter(&std::fs::read(&out).unwrap()),
        path: out,
    }
}

/// Whether an ELF64 executable has a PT_INTERP program header (it is dynamically linked).
fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF");
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([elf[o], elf[o + 1]]));
    let phoff = usize::try_from(u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap())).unwrap();
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let o = phoff + i * size;
        u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) == 3
    })
}

fn order(symbols: &[(u64, String)], names: &[&str]) -> Vec<String> {
    symbols
        .iter()
        .filter(|(_, n)| names.contains(&n.as_str()))
        .map(|(_, n)| n.clone())
        .collect()
}

/// Compiles C `source` in `dir` to an object (`-fPIC` for a shared library).
fn compile(dir: &Path, name: &str, source: &str, pic: bool) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let object = dir.join(format!("{name}.o"));
    let mut cmd = Command::new("cc");
    if pic {
        cmd.arg("-fPIC");
    }
    let status = cmd
        .args(["-O0", "-ffunction-sections", "-fdata-sections", "-c"])
        .arg(&c)
        .arg("-o")
        .arg(&object)
        .status()
        .unwrap();
    assert!(status.success(), "compiling {name}");
    object
}

const NAMES: [&str; 7] = [
    "first",
    "a_plain",
    "b_lto.llvm.12345",
    "_ZN4demo5hello17h0123456789abcdefE",
    "_ZN4demo3two17h1111111111111111E",
    "_ZN4demo3two17h2222222222222222E",
    "last",
];
const TABLES: [&str; 3] = ["table_cold", "table_hot", "table_lto.llvm.777"];

/// A temporary folder with the list and the object `hot.o` made from [`C`].
fn setup(name: &str) -> (PathBuf, PathBuf) {
    let dir = tempdir(name);
    std::fs::write(dir.join("hot.txt"), LIST).unwrap();
    let object = compile(&dir, "hot", C, false);
    (dir, object)
}

#[test]
fn the_linker_driver_links_loadbench_statically_with_listed_code_and_data_first() {
    let (dir, object) = setup("link-order");

    // The loadbench executable: the list's functions first, in its order, then the rest as
    // the object had them; the listed tables before the other; glibc linked in; and it runs.
    let ordered = link(
        &dir,
        &[&object],
        &[],
        "loadbench-0123456789abcdef",
        true,
        None,
    );
    assert_eq!(
        order(&ordered.code, &NAMES),
        [
            "last",
            "_ZN4demo5hello17h0123456789abcdefE",
            "b_lto.llvm.12345",
            "a_plain",
            "first",
            "_ZN4demo3two17h1111111111111111E",
            "_ZN4demo3two17h2222222222222222E",
        ]
    );
    assert_eq!(
        order(&ordered.data, &TABLES),
        ["table_lto.llvm.777", "table_hot", "table_cold"]
    );
    assert!(
        !ordered.dynamic,
        "the loadbench executable links glibc statically"
    );
    let ran = Command::new(&ordered.path).status().unwrap();
    assert_eq!(
        ran.code(),
        Some(0),
        "the static executable resolves localhost and runs"
    );

    // Any other output, or a link without lld: the object's order, untouched.
    for (name, lld) in [("other", true), ("loadbench-0123456789abcdef", false)] {
        let plain = link(&dir, &[&object], &[], name, lld, None);
        assert_eq!(order(&plain.code, &NAMES), NAMES, "{name}, lld {lld}");
        assert_eq!(order(&plain.data, &TABLES), TABLES, "{name}, lld {lld}");
        if name == "other" {
            assert!(plain.dynamic, "{name} is linked as cc links it");
        }
    }
}

#[test]
fn the_linker_driver_links_glibc_dynamically_when_asked_or_when_static_fails() {
    let (dir, object) = setup("link-dynamic");

    // LOADBENCH_LINK=dynamic: ordered, but glibc stays dynamic.
    let dynamic = link(
        &dir,
        &[&object],
        &[],
        "loadbench-0123456789abcdef",
        true,
        Some("dynamic"),
    );
    assert!(dynamic.dynamic);
    assert_eq!(order(&dynamic.code, &NAMES)[0], "last");
    assert_eq!(
        Command::new(&dynamic.path).status().unwrap().code(),
        Some(0)
    );

    // A library that only exists as a shared object cannot be linked statically: the driver
    // links dynamically instead, still ordered.
    let shared = compile(&dir, "only", SHARED_ONLY, true);
    let so = Command::new("cc")
        .arg("-shared")
        .arg(&shared)
        .arg("-o")
        .arg(dir.join("libsharedonly.so"))
        .status()
        .unwrap();
    assert!(so.success());
    let lib_dir = format!("-L{}", dir.display());
    let fallback = link(
        &dir,
        &[&object],
        &[&lib_dir, "-Wl,--no-as-needed", "-lsharedonly"],
        "loadbench-0123456789abcdef",
        true,
        None,
    );
    assert!(fallback.dynamic, "the static link failed, so it is dynamic");
    assert_eq!(order(&fallback.code, &NAMES)[0], "last");
}
