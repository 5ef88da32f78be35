//! The linker driver (crates/cli/link/cc): it lays the listed functions out first, in the
//! list's order, only for the loadbench executable, matching names as rustc's symbols change
//! between builds; every other link is plain cc. Checked on a real link with lld (the one rustc
//! uses), of C functions named like Rust's symbols.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::tempdir;

const C: &str = r#"
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
int main(void) { return 0; }
"#;

/// The list: in this order, a name this build does not have, one with another hash (a new
/// toolchain), one whose name is shared by two functions (then not guessed), one LTO renamed.
const LIST: &str = "last\nnot_in_this_build\n_ZN4demo5hello17hffffffffffffffffE\n\
                    _ZN4demo3two17hffffffffffffffffE\nb_lto\na_plain\n";

fn gcc_ld() -> PathBuf {
    let sysroot = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .unwrap();
    let sysroot = String::from_utf8(sysroot.stdout).unwrap();
    Path::new(sysroot.trim()).join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld")
}

/// Links `object` through the driver into `dir/name` with lld; the symbols' addresses by name.
fn link(dir: &Path, object: &Path, name: &str, lld: bool) -> Vec<(u64, String)> {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/cc");
    let out = dir.join(name);
    let mut cmd = Command::new(driver);
    if lld {
        cmd.arg("-fuse-ld=lld").arg("-B").arg(gcc_ld());
    }
    let status = cmd
        .arg(object)
        .arg("-o")
        .arg(&out)
        .env("LOADBENCH_HOT_FUNCTIONS", dir.join("hot.txt"))
        .status()
        .unwrap();
    assert!(status.success(), "linking {name}");
    let nm = Command::new("nm").arg("-n").arg(&out).output().unwrap();
    String::from_utf8(nm.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[1].eq_ignore_ascii_case("t"))
                .then(|| (u64::from_str_radix(f[0], 16).unwrap(), f[2].to_string()))
        })
        .collect()
}

fn order(symbols: &[(u64, String)], names: &[&str]) -> Vec<String> {
    symbols
        .iter()
        .filter(|(_, n)| names.contains(&n.as_str()))
        .map(|(_, n)| n.clone())
        .collect()
}

#[test]
fn the_linker_driver_lays_out_listed_functions_first_and_only_for_loadbench() {
    let dir = tempdir("link-order");
    std::fs::write(dir.join("hot.c"), C).unwrap();
    std::fs::write(dir.join("hot.txt"), LIST).unwrap();
    let object = dir.join("hot.o");
    let cc = Command::new("cc")
        .args(["-O0", "-ffunction-sections", "-c"])
        .arg(dir.join("hot.c"))
        .arg("-o")
        .arg(&object)
        .status()
        .unwrap();
    assert!(cc.success());
    let names = [
        "first",
        "a_plain",
        "b_lto.llvm.12345",
        "_ZN4demo5hello17h0123456789abcdefE",
        "_ZN4demo3two17h1111111111111111E",
        "_ZN4demo3two17h2222222222222222E",
        "last",
    ];

    // The loadbench executable: the list's functions first, in its order; the rest after, as
    // the object had them.
    let ordered = link(&dir, &object, "loadbench-0123456789abcdef", true);
    assert_eq!(
        order(&ordered, &names),
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

    // Any other output, or a link without lld: the object's order, untouched.
    for (name, lld) in [("other", true), ("loadbench-0123456789abcdef", false)] {
        let plain = link(&dir, &object, name, lld);
        assert_eq!(order(&plain, &names), names, "{name}, lld {lld}");
    }
}
