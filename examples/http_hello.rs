//! An HTTP/1.1 keep-alive "hello" server (`fibra::net::http::hello_server`): one fiber per
//! connection, pipelining-safe, every request answered with `Hello, world!`.
//!
//! `cargo run --release --example http_hello -- [PORT]` listens on 127.0.0.1:PORT (default: a
//! free port), prints the bound address and serves until killed.

mod common;

use std::io;

fn main() -> io::Result<()> {
    let port = common::port_argument()?;
    fibra::run(|| {
        let server = fibra::net::http::hello_server(("127.0.0.1", port))?;
        println!("listening on http://{}", server.local_addr());
        fibra::sleep(std::time::Duration::MAX);
        Ok(())
    })
}
