//! A TCP echo server: one fiber per connection, each copying what it reads back to its peer.
//!
//! `cargo run --release --example echo -- [PORT]` listens on 127.0.0.1:PORT (default: a free
//! port) and prints the bound address.

mod common;

use std::io;

fn main() -> io::Result<()> {
    let port = common::port_argument()?;
    fibra::run(|| {
        let listener = fibra::net::TcpListener::bind(("127.0.0.1", port))?;
        println!("listening on {}", listener.local_addr()?);
        for conn in listener.incoming() {
            let conn = conn?;
            fibra::spawn(move || io::copy(&mut &conn, &mut &conn));
        }
        Ok(())
    })
}
