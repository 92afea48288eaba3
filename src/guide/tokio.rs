//! # fibra and tokio, both ways
//!
//! fibra runs on tokio: one driver thread runs tokio's reactor, timers and blocking pool for
//! every fiber (or, with
//! [`RuntimeBuilder::tokio_handle`](crate::RuntimeBuilder::tokio_handle), an application's
//! own multi-thread tokio runtime does). So tokio libraries work inside fibers, and async code
//! can start fibers and await them.
//!
//! The examples name tokio itself, so an application depends on tokio beside fibra, with the
//! features it uses: `#[tokio::main]` and `tokio::runtime::Runtime::new` need `macros` and
//! `rt-multi-thread` (`tokio = { version = "1", features = ["full"] }` covers every example
//! here).
//!
//! ## Calling fibra from tokio
//!
//! An async application keeps its threads for tokio, so fibra's worker 0 cannot be the
//! caller's thread: [`Runtime::into_background`](crate::Runtime::into_background) puts every
//! worker on a thread of its own. Spawn fibers through its [`Handle`](crate::Handle) from any
//! task; a [`JoinHandle`](crate::JoinHandle) is a `Future`, so `.await` it (from a plain
//! thread, [`JoinHandle::join`](crate::JoinHandle::join) blocks instead). Dropping the
//! background runtime shuts it down.
//!
//! ```
//! use std::time::Duration;
//!
//! let fibers = fibra::Runtime::builder().workers(2).build().unwrap().into_background().unwrap();
//! let tokio = tokio::runtime::Runtime::new().unwrap();
//! let total = tokio.block_on(async {
//!     let handle = fibers.handle();
//!     // Blocking-style code, each piece in a fiber, awaited from async code.
//!     let jobs: Vec<_> = (1..=4u64)
//!         .map(|n| {
//!             handle.spawn(move || {
//!                 fibra::sleep(Duration::from_millis(1));
//!                 n * n
//!             })
//!         })
//!         .collect();
//!     let mut total = 0;
//!     for job in jobs {
//!         total += job.await.unwrap();
//!     }
//!     total
//! });
//! assert_eq!(total, 30);
//! ```
//!
//! ### In a `#[tokio::main]` program
//!
//! An application that already runs on tokio attaches fibra to its runtime with
//! [`RuntimeBuilder::tokio_handle`](crate::RuntimeBuilder::tokio_handle), so fibers and tasks
//! share one reactor, one timer wheel and one blocking pool, and puts fibra's workers on
//! threads of their own with `into_background`.
//!
//! Dropping a [`BackgroundRuntime`](crate::BackgroundRuntime), or calling its
//! [`shut_down`](crate::BackgroundRuntime::shut_down), blocks the calling thread until the
//! fibers have unwound and the workers ended. From async code, do it on tokio's blocking
//! pool — `spawn_blocking(move || fibers.shut_down())` — not on a task's thread.
//!
//! ```
//! use std::time::Duration;
//!
//! #[tokio::main]
//! async fn main() {
//!     let fibers = fibra::Runtime::builder()
//!         .tokio_handle(tokio::runtime::Handle::current())
//!         .build()
//!         .unwrap()
//!         .into_background()
//!         .unwrap();
//!     let answer = fibers.handle().spawn(|| {
//!         fibra::sleep(Duration::from_millis(1)); // on the application's tokio timers
//!         42
//!     });
//!     assert_eq!(answer.await.unwrap(), 42);
//!     tokio::task::spawn_blocking(move || fibers.shut_down()).await.unwrap();
//! }
//! ```
//!
//! ### Channels and locks between fibers and tasks
//!
//! A [`chan`](crate::chan) channel or a [`sync`](crate::sync) primitive can connect fibers and
//! tasks. In async code use the `_async` form of each wait — for example
//! [`Reader::recv_async`](crate::chan::Reader::recv_async),
//! [`Writer::send_async`](crate::chan::Writer::send_async),
//! [`Mutex::lock_async`](crate::sync::Mutex::lock_async) — which suspends only the task. The
//! blocking forms (`recv`, `send`, `lock`, [`sleep`](crate::sleep),
//! [`JoinHandle::join`](crate::JoinHandle::join), [`block_on`](crate::block_on)) called in a
//! task are not an error: outside a fiber they block the calling thread, here a tokio worker,
//! so the other tasks queued on that worker wait too, and on a current-thread runtime a wait
//! for one of them never ends.
//!
//! ```
//! use fibra::sync::Mutex;
//! use std::sync::Arc;
//!
//! let fibers = fibra::Runtime::builder().workers(2).build().unwrap().into_background().unwrap();
//! let tokio = tokio::runtime::Runtime::new().unwrap();
//! let (tx, rx) = fibra::chan::bounded(1);
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! // A fiber sends with the blocking `send`…
//! let producer = fibers.handle().spawn(move || {
//!     for n in 1..=3 {
//!         tx.send(n).unwrap();
//!     }
//! });
//! // …and a task receives and locks with the `_async` forms.
//! let consumer = tokio.spawn({
//!     let seen = seen.clone();
//!     async move {
//!         while let Some(n) = rx.recv_async().await {
//!             seen.lock_async().await.push(n);
//!         }
//!     }
//! });
//! tokio.block_on(async {
//!     producer.await.unwrap();
//!     consumer.await.unwrap();
//! });
//! assert_eq!(*seen.lock(), [1, 2, 3]);
//! ```
//!
//! ## Calling tokio from fibra
//!
//! [`block_on`](crate::block_on) (or [`WaitExt::wait`](crate::WaitExt::wait) on any future)
//! runs a future in the calling fiber: it polls it in place and parks only the fiber between
//! polls. The future needs no `Send`, and tokio's timers, sockets and channels work because
//! the fiber's worker is inside the driver's tokio context.
//!
//! ```
//! use fibra::WaitExt;
//! use std::time::Duration;
//!
//! fibra::run(|| {
//!     let (tx, rx) = tokio::sync::oneshot::channel();
//!     fibra::spawn(move || {
//!         fibra::block_on(tokio::time::sleep(Duration::from_millis(1)));
//!         tx.send("from a fiber, through a tokio channel").unwrap();
//!     });
//!     assert_eq!(rx.wait().unwrap(), "from a fiber, through a tokio channel");
//! });
//! ```
//!
//! ## Where a `tokio::spawn` inside a fiber runs
//!
//! A `tokio::spawn` made in a fiber spawns onto the driver's tokio runtime — the driver
//! thread, or the workers of the runtime given to `tokio_handle` — not onto a fibra worker.
//! The task runs beside the fibers and outlives the fiber that spawned it; await its
//! `JoinHandle` with `block_on` to wait for it. Keep such tasks short and non-blocking: with
//! the default driver they share one thread with every fiber's timers and I/O.
//!
//! ```
//! fibra::run(|| {
//!     let fiber_thread = std::thread::current().id();
//!     let task = tokio::spawn(async move { std::thread::current().id() != fiber_thread });
//!     let ran_elsewhere = fibra::block_on(task).unwrap();
//!     assert!(ran_elsewhere, "the task ran on the driver, not on the fiber's worker");
//! });
//! ```
//!
//! Do not hold a tokio context guard (`tokio::runtime::Handle::enter`) across a fibra wait:
//! other fibers of the worker enter and leave contexts meanwhile, and tokio requires guards
//! to be dropped in reverse order. Enter a context inside the future instead.
//!
//! ## Sharing a cancel token
//!
//! [`CancelToken`](crate::CancelToken) is tokio-util's `CancellationToken` (the type itself,
//! not a wrapper): a tokio task can cancel a fibra scope, and a fiber can cancel a tokio task;
//! see its page for an example. fibra uses tokio-util 0.7, so an application that names
//! `tokio_util::sync::CancellationToken` itself must depend on tokio-util 0.7 too; with
//! another version the two are different types. Using `fibra::CancelToken` everywhere avoids
//! the question.
