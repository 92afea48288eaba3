//! `receive!`: OTP's `receive … after … end`.

/// Selective receive over a process's [`Inbox`](crate::Inbox), with patterns, guards and one
/// optional `after` arm, as OTP's `receive`:
///
/// ```text
/// receive! { inbox,
///     Signal::Msg(Msg::Add(n)) if n > 0 => { … }   // pattern and guard
///     Signal::Exit { from, reason } => …,
///     after Duration::from_millis(50) => …,        // optional, last
/// }
/// ```
///
/// The mailbox is scanned from the oldest signal; the first one that matches an arm (in the
/// order written) is removed and that arm's body runs; signals that match no arm stay in
/// order. With `after`, the timeout starts when the receive first waits (after every signal
/// was examined) and is not restarted by arrivals that match nothing; `after
/// Duration::ZERO` polls. With only an `after` arm it is a sleep that leaves the mailbox
/// alone. Bodies run in the caller's context: `break`, `continue`, `return` and `?` act on
/// the enclosing code. Guards are evaluated while scanning and must not receive themselves;
/// a guard that panics leaves every signal where it was, and the panic goes on from the
/// `receive!`.
///
/// ```
/// use fibra::process::{self as process, Inbox, Signal};
/// use std::time::Duration;
///
/// enum Msg {
///     Job(u32),
///     Stop,
/// }
///
/// process::run(|inbox: Inbox<Msg>| {
///     let me = inbox.pid();
///     me.send(Msg::Job(1));
///     me.send(Msg::Stop);
///     me.send(Msg::Job(20));
///     let mut done = Vec::new();
///     loop {
///         fibra::process::receive! { inbox,
///             Signal::Msg(Msg::Job(n)) if n > 10 => done.push(n),
///             Signal::Msg(Msg::Stop) if !done.is_empty() => break,
///             after Duration::from_secs(5) => panic!("stuck"),
///         }
///     }
///     // Job(20) matched first; Stop waited for it; Job(1) matched no arm and stayed.
///     assert_eq!(done, [20]);
///     assert!(matches!(inbox.try_recv(), Some(Signal::Msg(Msg::Job(1)))));
/// });
/// ```
#[macro_export]
macro_rules! receive {
    ($inbox:expr, after $timeout:expr => $after:expr $(,)?) => {{
        let _ = (&$inbox).select(::core::option::Option::Some($timeout), |__signal, _| __signal);
        $after
    }};
    ($inbox:expr, $($arms:tt)+) => {
        $crate::__receive_arms!(@inbox [$inbox] @arms [] @idx [0] $($arms)+)
    };
}

/// Collects `receive!`'s arms, numbering them.
#[doc(hidden)]
#[macro_export]
macro_rules! __receive_arms {
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]
        after $timeout:expr => $after:block $(,)?) => {
        $crate::__receive_emit!([$inbox] [::core::option::Option::Some($timeout)] [$after] [$($arms)*])
    };
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]
        after $timeout:expr => $after:expr $(,)?) => {
        $crate::__receive_emit!([$inbox] [::core::option::Option::Some($timeout)] [$after] [$($arms)*])
    };
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]
        $pat:pat $(if $guard:expr)? => $body:block , $($rest:tt)*) => {
        $crate::__receive_arms!(@inbox [$inbox]
            @arms [$($arms)* [($($idx)*) ($pat) ($($guard)?) ($body)]] @idx [$($idx)* + 1] $($rest)*)
    };
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]
        $pat:pat $(if $guard:expr)? => $body:block $($rest:tt)*) => {
        $crate::__receive_arms!(@inbox [$inbox]
            @arms [$($arms)* [($($idx)*) ($pat) ($($guard)?) ($body)]] @idx [$($idx)* + 1] $($rest)*)
    };
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]
        $pat:pat $(if $guard:expr)? => $body:expr , $($rest:tt)*) => {
        $crate::__receive_arms!(@inbox [$inbox]
            @arms [$($arms)* [($($idx)*) ($pat) ($($guard)?) ($body)]] @idx [$($idx)* + 1] $($rest)*)
    };
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]
        $pat:pat $(if $guard:expr)? => $body:expr) => {
        $crate::__receive_arms!(@inbox [$inbox]
            @arms [$($arms)* [($($idx)*) ($pat) ($($guard)?) ($body)]] @idx [$($idx)* + 1])
    };
    (@inbox [$inbox:expr] @arms [$($arms:tt)*] @idx [$($idx:tt)*]) => {
        $crate::__receive_emit!([$inbox] [::core::option::Option::None]
            [::core::unreachable!("receive! without `after` returned no signal")] [$($arms)*])
    };
}

/// Expands `receive!`: the scan tests each signal by value against the arms without moving
/// out of it (every guard ends false after noting the first arm that matched; a guard runs
/// through `ReceiveArms::guard`, which keeps its panic until the signal is back in its place),
/// then the taken signal is matched again against that arm alone, outside any closure or
/// loop of ours, so the bodies' control flow is the caller's.
#[doc(hidden)]
#[macro_export]
macro_rules! __receive_emit {
    ([$inbox:expr] [$timeout:expr] [$after:expr]
        [$([($($idx:tt)*) ($pat:pat) ($($guard:expr)?) ($body:expr)])*]) => {{
        let __found = (&$inbox).select($timeout, |__signal, __arms| {
            #[allow(unused_variables)]
            match __signal {
                $(
                    $pat if __arms.trying()
                        $(&& __arms.guard(|| $guard))?
                        && __arms.matched($($idx)*) => ::core::unreachable!(),
                )*
                __signal => __signal,
            }
        });
        match __found {
            ::core::option::Option::Some(__found) => match __found {
                // A binding the guard used may go unused by the body.
                $( #[allow(unused_variables)] (__arm, $pat) if __arm == $($idx)* => $body, )*
                _ => ::core::unreachable!("receive!: the taken signal matches its arm"),
            },
            ::core::option::Option::None => $after,
        }
    }};
}
