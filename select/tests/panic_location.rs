//! A select that can never complete panics at the caller's line, through the macros too.

use fibra_channels::bounded;
use fibra_select::{select, Select};
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};

thread_local! {
    static AT: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
}

/// The message of `f`'s panic and the file and line it reported.
fn panic_of(f: impl FnOnce()) -> (String, String, u32) {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let at = info.location().map(|l| (l.file().to_owned(), l.line()));
            AT.with(|cell| *cell.borrow_mut() = at);
            previous(info);
        }));
    });
    let payload = panic::catch_unwind(AssertUnwindSafe(f)).expect_err("the select panics");
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .unwrap_or_default()
        .to_owned();
    let (file, line) = AT.with(|cell| cell.borrow_mut().take()).unwrap();
    (message, file, line)
}

#[test]
fn a_select_with_every_arm_disabled_panics_at_the_callers_line() {
    let (_tx, rx) = bounded::<u8>(1);
    let enabled = false;
    let first = line!();
    let from_macro = panic_of(|| {
        select! {
            recv(rx) if enabled -> _ => {}
        }
    });
    let from_builder = panic_of(|| Select::<()>::new().select());
    let last = line!();
    for (message, file, line) in [from_macro, from_builder] {
        assert_eq!(message, "select: all arms disabled");
        assert_eq!(file, file!());
        assert!((first..=last).contains(&line), "line {line}");
    }
}
