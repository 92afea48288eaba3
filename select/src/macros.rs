//! `select!` and `select_biased!`: a parser that normalizes the arms, then an emitter that
//! binds each arm's channel (temporaries live through the whole select), runs the engine, and
//! runs the winning arm's body in the caller's own block — so `break`, `continue`, `return`
//! and `?` in a body act on the caller's code.

/// Waits on several channel operations and runs the arm of the one that completes first.
///
/// ```text
/// select! {
///     recv(rx_a) -> msg => { … }            // msg: Option<T>; ready on a value or on closed
///     recv(rx_b) -> Some(v) => { … }        // ready only on a value
///     recv(rx_c) -> None => { … }           // ready only when closed and drained
///     recv(rx_d) if enabled -> msg => { … } // guard: a false guard disables the arm
///     send(tx, value) -> res => { … }       // res: Result<(), SendError<T>>
///     send_from(tx, slot) -> res => { … }   // slot: Option<T>, kept if another arm wins
///     cancelled(token) => { … }             // ready once the CancelToken is cancelled
///     cancelled(token) if enabled => { … }
///     default => { … }                      // never wait
///     default(timeout) => { … }             // wait at most `timeout`
/// }
/// ```
///
/// Each call checks the enabled arms in a fresh uniformly random order and completes the first
/// ready one without waiting; otherwise it waits on all of them and exactly one completes: a
/// receive arm that did not win takes no value, a send arm that did not win delivers nothing.
/// Channel expressions are evaluated in written order, then the guard; a send's value only when
/// its guard is true. The bodies are the select's value; they may `break`, `continue` or
/// `return`.
///
/// `default` runs at once when no arm is ready. `default(timeout)` runs once `timeout` has
/// passed without an arm completing — **also when no arm can complete at all** (every guard is
/// false, or every channel is closed and no arm accepts that): the select then waits out the
/// timeout, as Go's select with a timer arm does, so a loop around it does not spin.
///
/// A send's value is evaluated on entering the select, before any arm is chosen (a send can
/// only complete, or be taken by a waiting receiver, while the select holds the value). What
/// happens to it when another arm wins depends on the arm:
///
/// - `send(tx, value)` drops it, as Go does;
/// - `send_from(tx, slot)` gives it back: `slot` is a place (a variable, a field, an index) of
///   type `Option<T>`, evaluated once (when the guard is true) and borrowed until an arm is
///   chosen; the arm is enabled only while `slot` is `Some`, a win takes the value out
///   (`slot` is `None` afterwards; a closed channel hands it back in `Err(SendError(value))`),
///   and a loss puts it back into `slot`. If the select unwinds instead (its fiber is
///   cancelled while it waits), the value is dropped.
///
/// `cancelled(token)` waits for a [`CancelToken`](fibra_runtime::CancelToken) (fibra's, which
/// is tokio-util's) to be cancelled, beside the channel operations; the arm binds nothing.
/// A token cancelled before the select is an arm ready at once.
///
/// An arm's pattern decides when it is ready: `None` — only when its channel is closed and
/// drained; any pattern that matches `None` (a binding, `_`) — on a value or on closed; any
/// other (`Some(v)`) — only on a value. A received value the pattern then does not match
/// (`Some(0)` getting `Some(1)`) panics; use irrefutable sub-patterns. Works in fibers and on
/// plain threads; waiting is a cancellation point.
///
/// # Panics
///
/// `select: all arms disabled` when every guard is false and there is no default;
/// `select: all channels closed` when every enabled arm's channel is closed, no arm accepts
/// closed, and there is no default.
///
/// ```
/// use std::time::Duration;
/// use fibra::select;
///
/// let (tx, rx) = fibra::chan::bounded(1);
/// let (_quit_tx, quit) = fibra::chan::bounded::<()>(1);
/// tx.send(10).unwrap();
/// let mut total = 0;
/// loop {
///     select! {
///         recv(rx) -> Some(v) => total += v,
///         recv(quit) -> None => break,
///         recv(fibra::chan::close_after(Duration::from_millis(5))) -> _ => break,
///     }
/// }
/// assert_eq!(total, 10);
/// ```
///
/// A dispatcher that hands out jobs until told to stop: `send_from` keeps the job that no
/// worker took, `cancelled` ends the loop.
///
/// ```
/// use fibra::select;
///
/// fibra::run(|| {
///     let stop = fibra::CancelToken::new();
///     let (jobs_tx, jobs) = fibra::chan::bounded::<u32>(0);
///     let (done_tx, done) = fibra::chan::bounded::<u32>(0);
///     fibra::scope(|s| {
///         s.spawn(|| {
///             for job in jobs.iter() {
///                 done_tx.send(job).unwrap();
///             }
///         });
///         let mut pending = vec![3, 2, 1];
///         let mut next = pending.pop();
///         let mut finished = Vec::new();
///         loop {
///             select! {
///                 send_from(jobs_tx, next) -> res => {
///                     res.unwrap();
///                     next = pending.pop();
///                 }
///                 recv(done) -> Some(job) => {
///                     finished.push(job);
///                     if finished.len() == 3 {
///                         stop.cancel();
///                     }
///                 }
///                 cancelled(stop) => break,
///             }
///         }
///         jobs_tx.close();
///         assert_eq!(finished, [1, 2, 3]);
///         assert_eq!(next, None);
///     });
/// });
/// ```
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@parse (false) [] [] $($tokens)*)
    };
}

/// Like [`select!`], but checks the arms in written order: the first ready arm wins.
///
/// ```
/// use fibra::select_biased;
/// let (tx_a, rx_a) = fibra::chan::bounded(1);
/// let (tx_b, rx_b) = fibra::chan::bounded(1);
/// tx_a.send("a").unwrap();
/// tx_b.send("b").unwrap();
/// let first = select_biased! {
///     recv(rx_a) -> msg => msg,
///     recv(rx_b) -> msg => msg,
/// };
/// assert_eq!(first, Some("a"));
/// ```
#[macro_export]
macro_rules! select_biased {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@parse (true) [] [] $($tokens)*)
    };
}

/// Parses `select!` arms into `[(op guard pattern body)…]` plus the default arm.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    // Every arm parsed.
    (@parse $biased:tt $arms:tt $default:tt) => {
        $crate::__select_emit!(@bind $biased $default $arms [] [0usize]
            (__fibra_arm0 __fibra_arm1 __fibra_arm2 __fibra_arm3 __fibra_arm4 __fibra_arm5
             __fibra_arm6 __fibra_arm7 __fibra_arm8 __fibra_arm9 __fibra_arm10 __fibra_arm11
             __fibra_arm12 __fibra_arm13 __fibra_arm14 __fibra_arm15 __fibra_arm16 __fibra_arm17
             __fibra_arm18 __fibra_arm19 __fibra_arm20 __fibra_arm21 __fibra_arm22 __fibra_arm23
             __fibra_arm24 __fibra_arm25 __fibra_arm26 __fibra_arm27 __fibra_arm28 __fibra_arm29
             __fibra_arm30 __fibra_arm31))
    };
    (@parse $biased:tt $arms:tt [] default ( $timeout:expr ) => $($rest:tt)*) => {
        $crate::__select_parse!(@body $biased $arms [] (default_timeout $timeout) () () $($rest)*)
    };
    (@parse $biased:tt $arms:tt [] default => $($rest:tt)*) => {
        $crate::__select_parse!(@body $biased $arms [] (default_now) () () $($rest)*)
    };
    (@parse $biased:tt $arms:tt [$($default:tt)+] default $($rest:tt)*) => {
        ::core::compile_error!("select!: more than one `default` arm")
    };
    (@parse $biased:tt $arms:tt $default:tt recv ( $r:expr ) if $($rest:tt)*) => {
        $crate::__select_parse!(@guard $biased $arms $default (recv $r) [] $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt recv ( $r:expr ) -> $($rest:tt)*) => {
        $crate::__select_parse!(@pat $biased $arms $default (recv $r) (true) $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt send ( $w:expr, $v:expr ) if $($rest:tt)*) => {
        $crate::__select_parse!(@guard $biased $arms $default (send $w, $v) [] $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt send ( $w:expr, $v:expr ) -> $($rest:tt)*) => {
        $crate::__select_parse!(@pat $biased $arms $default (send $w, $v) (true) $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt send_from ( $w:expr, $slot:expr ) if $($rest:tt)*) => {
        $crate::__select_parse!(@guard $biased $arms $default (send_from $w, $slot) [] $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt send_from ( $w:expr, $slot:expr ) -> $($rest:tt)*) => {
        $crate::__select_parse!(@pat $biased $arms $default (send_from $w, $slot) (true) $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt cancelled ( $t:expr ) if $($rest:tt)*) => {
        $crate::__select_parse!(@guard_body $biased $arms $default (cancelled $t) [] $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt cancelled ( $t:expr ) => $($rest:tt)*) => {
        $crate::__select_parse!(@body $biased $arms $default (cancelled $t) (true) (()) $($rest)*)
    };
    (@parse $biased:tt $arms:tt $default:tt $($rest:tt)+) => {
        ::core::compile_error!(
            "select!: expected `recv(r) -> pattern => body`, `send(w, value) -> pattern => body`, \
             `send_from(w, slot) -> pattern => body`, `cancelled(token) => body`, \
             `default => body` or `default(timeout) => body`"
        )
    };

    // A guard runs up to the `->`.
    (@guard $biased:tt $arms:tt $default:tt $op:tt [$($guard:tt)*] -> $($rest:tt)*) => {
        $crate::__select_parse!(@pat $biased $arms $default $op ($($guard)*) $($rest)*)
    };
    (@guard $biased:tt $arms:tt $default:tt $op:tt [$($guard:tt)*] $next:tt $($rest:tt)*) => {
        $crate::__select_parse!(@guard $biased $arms $default $op [$($guard)* $next] $($rest)*)
    };
    (@guard $biased:tt $arms:tt $default:tt $op:tt [$($guard:tt)*]) => {
        ::core::compile_error!("select!: expected `-> pattern => body` after the guard")
    };
    // A cancel arm's guard runs up to the `=>`; the arm binds nothing.
    (@guard_body $biased:tt $arms:tt $default:tt $op:tt [$($guard:tt)*] => $($rest:tt)*) => {
        $crate::__select_parse!(@body $biased $arms $default $op ($($guard)*) (()) $($rest)*)
    };
    (@guard_body $biased:tt $arms:tt $default:tt $op:tt [$($guard:tt)*] $next:tt $($rest:tt)*) => {
        $crate::__select_parse!(@guard_body $biased $arms $default $op [$($guard)* $next] $($rest)*)
    };
    (@guard_body $biased:tt $arms:tt $default:tt $op:tt [$($guard:tt)*]) => {
        ::core::compile_error!("select!: expected `=> body` after the guard")
    };

    // The pattern: a literal `None` makes a closed-only arm.
    (@pat $biased:tt $arms:tt $default:tt (recv $r:expr) $guard:tt None => $($rest:tt)*) => {
        $crate::__select_parse!(@body $biased $arms $default (recv_closed $r) $guard (None) $($rest)*)
    };
    (@pat $biased:tt $arms:tt $default:tt $op:tt $guard:tt $p:pat => $($rest:tt)*) => {
        $crate::__select_parse!(@body $biased $arms $default $op $guard ($p) $($rest)*)
    };
    (@pat $biased:tt $arms:tt $default:tt $op:tt $guard:tt $($rest:tt)*) => {
        ::core::compile_error!("select!: expected `pattern => body` after `->`")
    };

    // The body: a block (comma optional) or an expression (comma unless last).
    (@body $biased:tt $arms:tt $default:tt $op:tt $guard:tt $p:tt $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@push $biased $arms $default $op $guard $p $body $($rest)*)
    };
    (@body $biased:tt $arms:tt $default:tt $op:tt $guard:tt $p:tt $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@push $biased $arms $default $op $guard $p $body $($rest)*)
    };
    (@body $biased:tt $arms:tt $default:tt $op:tt $guard:tt $p:tt $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!(@push $biased $arms $default $op $guard $p { $body } $($rest)*)
    };
    (@body $biased:tt $arms:tt $default:tt $op:tt $guard:tt $p:tt $body:expr) => {
        $crate::__select_parse!(@push $biased $arms $default $op $guard $p { $body })
    };

    (@push $biased:tt $arms:tt $default:tt (default_now) () () $body:tt $($rest:tt)*) => {
        $crate::__select_parse!(@parse $biased $arms [now $body] $($rest)*)
    };
    (@push $biased:tt $arms:tt $default:tt (default_timeout $timeout:expr) () () $body:tt $($rest:tt)*) => {
        $crate::__select_parse!(@parse $biased $arms [timeout ($timeout) $body] $($rest)*)
    };
    (@push $biased:tt [$($arms:tt)*] $default:tt $op:tt $guard:tt $p:tt $body:tt $($rest:tt)*) => {
        $crate::__select_parse!(@parse $biased [$($arms)* ($op $guard $p $body)] $default $($rest)*)
    };
}

/// Emits a parsed `select!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_emit {
    // Every arm bound: run the engine, turn the operations into results, run the winner.
    (@bind $biased:tt $default:tt [] [$(($id:ident $p:tt $body:tt ($($k:tt)*) $how:tt))*] $count:tt $ids:tt) => {{
        let __fibra_index = $crate::__private::select(
            &mut [$($crate::__private::Arm::as_dyn(&$id.0)),*],
            &[$($id.1),*],
            $biased,
            $crate::__select_emit!(@fallback $default),
        );
        $(
            let $id = $crate::__select_emit!(@finish $how $id (__fibra_index == $($k)*));
        )*
        $(
            if __fibra_index == $($k)* {
                $crate::__select_emit!(@handle $id $p $body)
            } else
        )*
        {
            $crate::__select_emit!(@default_body $default)
        }
    }};
    // One arm: bind its channel for the whole select, then prepare its operation only if the
    // guard holds (so a send's value is not evaluated otherwise); `@start` and `@accepts_closed`
    // hold what differs between the kinds of arm.
    (@bind $biased:tt $default:tt [(($kind:ident $target:expr $(, $v:expr)?) ($($guard:tt)*) $p:tt $body:tt) $($arms:tt)*]
        [$($done:tt)*] [$($k:tt)*] ($id:ident $($ids:ident)*)) => {
        match $target {
            ref $id => {
                let $id = if $($guard)* {
                    $crate::__select_emit!(@start $kind $id $($v)?)
                } else {
                    ::core::option::Option::None
                };
                let $id = {
                    let __fibra_closed = $crate::__select_emit!(@accepts_closed $kind $id $p);
                    ($id, __fibra_closed)
                };
                $crate::__select_emit!(@bind $biased $default [$($arms)*]
                    [$($done)* ($id $p $body ($($k)*) ($kind $($v)?))] [$($k)* + 1] ($($ids)*))
            }
        }
    };
    (@bind $biased:tt $default:tt [$($arms:tt)+] $done:tt $count:tt ()) => {
        ::core::compile_error!("select!: at most 32 arms")
    };

    // The operation an arm's channel starts, if it has one to start (a `send_from` with an
    // empty slot has none).
    (@start recv $id:ident) => {{
        use $crate::__private::RecvTarget as _;
        ::core::option::Option::Some($id.__fibra_recv())
    }};
    (@start recv_closed $id:ident) => {{
        use $crate::__private::RecvTarget as _;
        ::core::option::Option::Some($id.__fibra_recv_closed())
    }};
    (@start cancelled $id:ident) => {{
        use $crate::__private::CancelTarget as _;
        ::core::option::Option::Some($id.__fibra_cancelled())
    }};
    (@start send $id:ident $v:expr) => {{
        use $crate::__private::SendTarget as _;
        ::core::option::Option::Some($id.__fibra_send($v))
    }};
    // `send_from`'s slot is a place evaluated once, here: its operation keeps a borrow of it.
    (@start send_from $id:ident $slot:expr) => {{
        use $crate::__private::SendTarget as _;
        $crate::__private::SendFrom::start(&mut $slot, |__fibra_value| $id.__fibra_send(__fibra_value))
    }};

    // An arm's result if it won; a losing `send_from` puts its value back into its slot.
    (@finish (send_from $slot:expr) $id:ident ($won:expr)) => {
        $crate::__private::SendFrom::finish_or_keep($id.0, $won)
    };
    (@finish $how:tt $id:ident ($won:expr)) => {
        $crate::__private::Finish::finish($id.0, $won)
    };

    // Whether a closed channel makes the arm ready: for a plain receive, when its pattern
    // matches `None`; a closed-only receive waits for exactly that, and a send reports it as its
    // `Err(SendError)`.
    (@accepts_closed recv $id:ident ($p:pat)) => {
        $crate::__private::accepts_none(&$id, |__fibra_value| {
            #[allow(unused_variables, unused_mut, unreachable_patterns, clippy::match_single_binding)]
            let __fibra_accepts = match __fibra_value {
                $p => true,
                _ => false,
            };
            __fibra_accepts
        })
    };
    (@accepts_closed $kind:ident $id:ident $p:tt) => { true };

    (@handle $id:ident ($p:pat) $body:tt) => {
        match $crate::__private::won($id) {
            $p => $body,
            #[allow(unreachable_patterns)]
            _ => $crate::__private::unmatched(),
        }
    };

    (@fallback []) => { $crate::__private::Fallback::Block };
    (@fallback [now $body:tt]) => { $crate::__private::Fallback::Now };
    (@fallback [timeout ($timeout:expr) $body:tt]) => { $crate::__private::Fallback::timeout($timeout) };

    (@default_body []) => { $crate::__private::no_default() };
    (@default_body [now $body:tt]) => { $body };
    (@default_body [timeout ($timeout:expr) $body:tt]) => { $body };
}
