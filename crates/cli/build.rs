//! Links the loadbench executable as position-dependent (`-no-pie`): the loader then has no
//! relocation table to read and no `.data.rel.ro` to rewrite at every start, about 1.3 MiB of
//! resident memory in a run (docs/performance.md, "Memory at 5000 connections"). The code is
//! still compiled position-independent; only the executable's link changes.

fn main() {
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
