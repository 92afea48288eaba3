//! Misuse outside a runtime panics at the caller's line, naming the function called.

use fibra_runtime::{Builder, Handle, ScopeOptions};
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::time::Duration;

thread_local! {
    /// Where the last panic of this thread happened, as the hook saw it.
    static LAST_PANIC_AT: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
}

/// The message of `f`'s panic, and the file and line the panic reported.
fn panic_of(f: impl FnOnce()) -> (String, String, u32) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let at = info.location().map(|l| (l.file().to_owned(), l.line()));
            LAST_PANIC_AT.with(|last| *last.borrow_mut() = at);
        }))
    });
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("the call panics");
    let message = match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload.downcast_ref::<&str>().unwrap().to_string(),
    };
    let (file, line) = LAST_PANIC_AT.with(|last| last.borrow_mut().take()).unwrap();
    (message, file, line)
}

/// A call that misuses the API.
type Call = Box<dyn FnOnce()>;

#[test]
fn calls_outside_a_runtime_panic_at_the_callers_line_naming_the_function() {
    const HOUR: Duration = Duration::from_secs(3600);
    let first = line!();
    let cases: Vec<(&str, Call)> = vec![
        (
            "fibra::spawn()",
            Box::new(|| drop(fibra_runtime::spawn(|| ()))),
        ),
        (
            "fibra::spawn_local()",
            Box::new(|| drop(fibra_runtime::spawn_local(|| ()))),
        ),
        (
            "fibra::Builder::spawn()",
            Box::new(|| drop(Builder::new().spawn(|| ()))),
        ),
        (
            "fibra::Builder::spawn_local()",
            Box::new(|| drop(Builder::new().spawn_local(|| ()))),
        ),
        ("fibra::detach()", Box::new(|| fibra_runtime::detach(|| ()))),
        (
            "fibra::Handle::current()",
            Box::new(|| drop(Handle::current())),
        ),
        (
            "fibra::current()",
            Box::new(|| drop(fibra_runtime::current())),
        ),
        ("fibra::scope()", Box::new(|| fibra_runtime::scope(|_| ()))),
        (
            "fibra::scope_with()",
            Box::new(|| {
                let _ = fibra_runtime::scope_with(ScopeOptions::new(), |_| ());
            }),
        ),
        (
            "fibra::timeout()",
            Box::new(|| {
                let _ = fibra_runtime::timeout(HOUR, || ());
            }),
        ),
        (
            "fibra::parallel_map()",
            Box::new(|| drop(fibra_runtime::parallel_map([1], |x| x))),
        ),
        (
            "fibra::parallel_map_limited()",
            Box::new(|| drop(fibra_runtime::parallel_map_limited([1], 1, |x| x))),
        ),
        (
            "fibra::parallel_chunks()",
            Box::new(|| drop(fibra_runtime::parallel_chunks([1], |x| x))),
        ),
        ("fibra::race()", Box::new(|| fibra_runtime::race([|| ()]))),
        (
            "fibra::race_with()",
            Box::new(|| fibra_runtime::race_with(|r| r.enter(|| ()))),
        ),
        (
            "fibra::race!()",
            Box::new(|| fibra_runtime::race!(|| (), || ())),
        ),
    ];
    let last = line!();
    for (called, call) in cases {
        let (message, file, line) = panic_of(call);
        assert!(
            message.starts_with(&format!("{called} called outside a fiber"))
                || message.starts_with(&format!("{called} called outside a fibra runtime;")),
            "{called}: {message}"
        );
        assert_eq!(
            file,
            file!(),
            "{called} reported its panic in {file}:{line}"
        );
        assert!(
            (first..=last).contains(&line),
            "{called} reported line {line}"
        );
    }
}

#[test]
fn spawning_outside_a_runtime_says_how_to_reach_one() {
    let (message, _, _) = panic_of(|| drop(fibra_runtime::spawn(|| ())));
    assert_eq!(
        message,
        "fibra::spawn() called outside a fibra runtime; from another thread or a tokio task, \
         spawn through the runtime's Handle (Runtime::handle, BackgroundRuntime::handle)"
    );
}

#[test]
fn a_zero_limit_panics_at_the_callers_line() {
    let line = line!() + 1;
    let (message, file, at) = panic_of(|| drop(fibra_runtime::parallel_map_limited([1], 0, |x| x)));
    assert_eq!(
        message,
        "fibra::parallel_map_limited() needs a limit of at least 1"
    );
    assert_eq!((file.as_str(), at), (file!(), line));
}
