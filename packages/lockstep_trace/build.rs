//! Generates the prost structs of the dependency-header schema from `proto/lockstep/dependency_header.proto`.
//! protox parses the file in pure Rust, so building needs no `protoc`; prost-build writes
//! `$OUT_DIR/lockstep.rs` (one file per protobuf package), which `src/proto.rs` includes.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let descriptors = protox::compile(["lockstep/dependency_header.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
