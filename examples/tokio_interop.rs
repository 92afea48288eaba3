//! fibra and tokio in one program, both ways.
//!
//! - An async `main` (a tokio runtime) starts a fibra runtime in the background, spawns fibers
//!   that run blocking-style code and awaits their `JoinHandle`s.
//! - Inside a fiber, `fibra::block_on` and `.wait()` run tokio futures: a tokio TCP server
//!   answers a fibra client, and a `tokio::spawn` from a fiber runs on the driver's runtime.
//! - One cancel token is shared by a tokio task and a fibra scope.
//!
//! Run it with `cargo run --example tokio_interop`; it ends by itself.

use fibra::{CancelToken, ScopeOptions, WaitExt};
use std::io::{Read, Write};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() {
    let fibers = fibra::Runtime::builder()
        .workers(2)
        .build()
        .expect("fibra runtime")
        .into_background()
        .expect("fibra worker thread");
    let handle = fibers.handle();

    // tokio -> fibra: blocking-style code in fibers, awaited from async code.
    let squares: Vec<_> = (1..=5u64)
        .map(|n| {
            handle.spawn(move || {
                fibra::sleep(Duration::from_millis(n));
                n * n
            })
        })
        .collect();
    let mut total = 0;
    for square in squares {
        total += square.await.expect("fiber");
    }
    println!("sum of squares from 5 fibers: {total}");
    assert_eq!(total, 55);

    // fibra -> tokio: a tokio server, a fibra client, and the server's task awaited in a fiber.
    let exchanged = handle
        .spawn(|| {
            let listener =
                fibra::block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
            let addr = listener.local_addr().expect("address");
            // Spawned from a fiber: the task runs on the driver's tokio runtime.
            let server = tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await?;
                let mut name = [0; 5];
                socket.read_exact(&mut name).await?;
                socket.write_all(b"hello, ").await?;
                socket.write_all(&name).await?;
                std::io::Result::Ok(())
            });
            let mut client = fibra::net::TcpStream::connect(addr).expect("connect");
            client.write_all(b"fiber").expect("write");
            let mut answer = String::new();
            client.read_to_string(&mut answer).expect("read");
            server.wait().expect("server task").expect("server io");
            answer
        })
        .await
        .expect("fiber");
    println!("a tokio server said: {exchanged}");
    assert_eq!(exchanged, "hello, fiber");

    // One token for both: a tokio task cancels a scope of fibers.
    let token = CancelToken::new();
    let canceller = tokio::spawn({
        let token = token.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            token.cancel();
        }
    });
    let scoped = token.clone();
    let ended = handle
        .spawn(move || {
            fibra::scope_with(ScopeOptions::new().token(scoped), |s| {
                for _ in 0..3 {
                    s.spawn(|| loop {
                        fibra::sleep(Duration::from_millis(1));
                    });
                }
            })
        })
        .await
        .expect("fiber");
    canceller.await.expect("canceller");
    println!("the scope ended: {}", ended.unwrap_err());
    assert!(token.is_cancelled());
}
