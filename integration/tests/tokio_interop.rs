//! fibra inside tokio applications: spawning fibers from tasks and awaiting them, attaching to
//! the application's runtime, and starting a fibra runtime from within a tokio one.

// tokio compiles its networking out under `--cfg loom`; these tests need it.
#![cfg(not(loom))]

use fibra::{Runtime, WaitExt};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_join_handle_is_awaited_in_a_tokio_test() {
    // Started from inside a (current-thread) tokio runtime: fibra's own driver thread is
    // separate, so this must not fail with "cannot start a runtime from within a runtime".
    let fibra = Runtime::builder()
        .workers(2)
        .build()
        .unwrap()
        .into_background()
        .unwrap();
    let value = fibra
        .handle()
        .spawn(|| {
            fibra::sleep(Duration::from_millis(1));
            6 * 7
        })
        .await
        .unwrap();
    assert_eq!(value, 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handle_spawn_from_inside_a_tokio_task() {
    let fibra = Runtime::builder()
        .workers(1)
        .build()
        .unwrap()
        .into_background()
        .unwrap();
    let handle = fibra.handle();
    let sum = tokio::spawn(async move {
        let fibers: Vec<_> = (0..10u64).map(|i| handle.spawn(move || i)).collect();
        let mut sum = 0;
        for fiber in fibers {
            sum += fiber.await.unwrap();
        }
        sum
    })
    .await
    .unwrap();
    assert_eq!(sum, 45);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attached_fibers_share_the_applications_reactor() {
    let fibra = Runtime::builder()
        .workers(2)
        .tokio_handle(tokio::runtime::Handle::current())
        .build()
        .unwrap()
        .into_background()
        .unwrap();
    // Bound by the application, accepted by a fiber.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = fibra.handle().spawn(move || {
        let (mut socket, _) = listener.accept().wait().unwrap();
        socket.write_all(b"from a fiber").wait().unwrap();
    });
    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    let mut received = Vec::new();
    client.read_to_end(&mut received).await.unwrap();
    assert_eq!(received, b"from a fiber");
    server.await.unwrap();
}

#[tokio::test]
async fn attaching_to_a_current_thread_runtime_is_refused_with_advice() {
    let error = Runtime::builder()
        .tokio_handle(tokio::runtime::Handle::current())
        .build()
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("current-thread tokio runtime"),
        "{message}"
    );
    assert!(message.contains("multi-thread"), "{message}");
}

/// A runtime without timers was accepted, and the first timed wait of a fiber then panicked
/// inside its worker's scheduling loop (where timed parks are armed), aborting the process.
#[test]
fn attaching_to_a_runtime_without_timers_is_refused_with_advice() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_io()
        .build()
        .unwrap();
    let error = Runtime::builder()
        .tokio_handle(tokio.handle().clone())
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    let message = error.to_string();
    assert!(message.contains("without timers"), "{message}");
    assert!(message.contains("enable_time"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_on_of_a_fibra_runtime_runs_inside_spawn_blocking() {
    let value = tokio::task::spawn_blocking(|| {
        Runtime::builder()
            .workers(2)
            .build()
            .unwrap()
            .block_on(|| fibra::spawn(|| 5).join().unwrap())
    })
    .await
    .unwrap();
    assert_eq!(value, 5);
}
