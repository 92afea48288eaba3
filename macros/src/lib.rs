//! fibra's `#[fibra::main]` and `#[fibra::test]` attributes: a `main` or a test whose body runs
//! as the main fiber of a fibra runtime.
//!
//! Both take the options `flavor = "current_thread"` (one worker thread) or
//! `flavor = "multi_thread"` (the default) and, with the latter, `workers = N` (the runtime's
//! worker threads; default: `FIBRA_WORKERS`, else one per core); `#[fibra::test]` also takes
//! `timeout = "30s"` (units `ms`, `s`, `m`; default 60 s). An unknown or repeated option fails
//! the build.

#![forbid(unsafe_code)]

mod options;

use options::Options;
use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::{parse_macro_input, ItemFn};

/// Runs `main` as the main fiber of a fibra runtime, and returns what it returns.
///
/// Options, as tokio's `#[tokio::main]` names them:
///
/// - `flavor = "multi_thread"` (the default): the runtime has `workers = N` worker threads, or
///   without that option as many as `FIBRA_WORKERS` says, else one per core.
/// - `flavor = "current_thread"`: the runtime has one worker thread; `workers` is then an error.
///
/// The function is a plain `fn`, not an `async fn`: in a fiber, blocking calls suspend only the
/// fiber (use `fibra::block_on` for a future). It may return anything, `impl Trait` included.
///
/// ```
/// #[fibra::main(workers = 2)]
/// fn main() -> Result<(), String> {
///     let (tx, rx) = fibra::chan::bounded(1);
///     fibra::spawn(move || tx.send("hello").unwrap());
///     assert_eq!(rx.recv().unwrap(), "hello");
///     Ok(())
/// }
/// ```
///
/// One worker thread, for fibers that need no parallelism:
///
/// ```
/// #[fibra::main(flavor = "current_thread")]
/// fn main() {
///     assert_eq!(fibra::Handle::current().workers(), 1);
///     let halves = fibra::scope(|s| {
///         let low = s.spawn(|| (1..=50).sum::<u32>());
///         let high = s.spawn(|| (51..=100).sum::<u32>());
///         (low.join().unwrap(), high.join().unwrap())
///     });
///     assert_eq!(halves.0 + halves.1, 5050);
/// }
/// ```
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, Kind::Main)
}

/// Runs a test as the main fiber of its own fibra runtime, failing it if it outlasts its
/// timeout instead of hanging.
///
/// Options: `flavor = "multi_thread"` (the default) with `workers = N`, or
/// `flavor = "current_thread"` for one worker thread, as for [`#[fibra::main]`](macro@main);
/// and `timeout = "10s"` (`ms`, `s` or `m`; default 60 s). It adds `#[test]` itself, and refuses
/// a second one; other attributes (`#[should_panic]`, `#[ignore]`) go with the test.
///
/// When the timeout passes, a dump of the test's fibers (`fibra::dump`: what
/// each waits for, and on which line) is printed on stderr, the fibers are cancelled and the
/// test fails with a panic that says so; fibers the test detached are waited for within the
/// same timeout, and fail it the same way if they outlast it; a test stuck where it cannot be cancelled (a
/// thread-blocking call) ends the test process after a further grace period, with a message on
/// stderr. A deadlock found in the test panics (`fibra::Deadlock::Panic`) unless the
/// environment variable `FIBRA_DEADLOCK` says otherwise. A cycle is found wherever the test
/// runs; "all fibers are asleep" only when nothing else in the process could wake a fiber,
/// so in practice when the test runs alone (`cargo test NAME`, or `--test-threads=1`): the
/// threads of other tests running beside it might, and keep that check silent; such a test
/// then fails at its timeout, with the dump.
///
/// (The examples below are compiled but not run as doctests: rustdoc leaves out `#[test]`
/// functions. In a crate's tests they run as any test does.)
///
/// ```
/// #[fibra::test(workers = 2, timeout = "5s")]
/// fn ping_pong() {
///     let (tx, rx) = fibra::chan::bounded(0);
///     let echo = fibra::spawn(move || rx.recv().unwrap() * 2);
///     tx.send(21).unwrap();
///     assert_eq!(echo.join().unwrap(), 42);
/// }
/// ```
///
/// One worker thread, as tokio's `#[tokio::test]` has by default:
///
/// ```
/// #[fibra::test(flavor = "current_thread")]
/// fn one_worker() {
///     assert_eq!(fibra::Handle::current().workers(), 1);
///     assert_eq!(fibra::spawn(|| 6 * 7).join().unwrap(), 42);
/// }
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, Kind::Test)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Main,
    Test,
}

fn expand(args: TokenStream, item: TokenStream, kind: Kind) -> TokenStream {
    let parser = |input: syn::parse::ParseStream<'_>| Options::parse(input, kind == Kind::Test);
    let options = match parser.parse(args) {
        Ok(options) => options,
        Err(error) => return error.to_compile_error().into(),
    };
    let function = parse_macro_input!(item as ItemFn);
    match generate(options, function, kind) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

fn generate(
    options: Options,
    function: ItemFn,
    kind: Kind,
) -> syn::Result<proc_macro2::TokenStream> {
    let name = match kind {
        Kind::Main => "#[fibra::main]",
        Kind::Test => "#[fibra::test]",
    };
    if let Some(asyncness) = &function.sig.asyncness {
        return Err(syn::Error::new_spanned(
            asyncness,
            format!("{name} takes a plain `fn`: in a fiber, blocking calls suspend only the fiber (use `fibra::block_on` to wait for a future)"),
        ));
    }
    if let Some(constness) = &function.sig.constness {
        return Err(syn::Error::new_spanned(
            constness,
            format!(
                "{name} takes a plain `fn`, not a `const fn`: its body runs in a runtime it starts"
            ),
        ));
    }
    if !function.sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &function.sig.inputs,
            format!("{name} functions take no arguments"),
        ));
    }
    if kind == Kind::Test {
        if let Some(test) = function.attrs.iter().find(|attr| is_std_test(attr.path())) {
            return Err(syn::Error::new_spanned(
                test,
                "#[fibra::test] adds `#[test]` itself: remove this one, which would run the test \
                 a second time",
            ));
        }
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let workers = match options.workers {
        Some(workers) => quote!(::core::option::Option::Some(#workers)),
        None => quote!(::core::option::Option::None),
    };
    // The closure's return type is left to inference, which takes it from the function's:
    // naming it would fail for `impl Trait`, which a closure cannot declare.
    let body = quote!(move || #block);
    // The body's own inner attributes (`#![allow(..)]`), which syn lists with the outer ones,
    // stay inner: in the generated body, which holds the original one.
    let (inner, outer): (Vec<_>, Vec<_>) = attrs
        .into_iter()
        .partition(|attr| matches!(attr.style, syn::AttrStyle::Inner(_)));
    Ok(match kind {
        Kind::Main => quote! {
            #(#outer)*
            #vis #sig {
                #(#inner)*
                ::fibra::__private::main(#workers, #body)
            }
        },
        Kind::Test => {
            let millis = options.timeout_ms;
            quote! {
                #[::core::prelude::v1::test]
                #(#outer)*
                #vis #sig {
                    #(#inner)*
                    ::fibra::__private::test(
                        #workers,
                        ::std::time::Duration::from_millis(#millis),
                        #body,
                    )
                }
            }
        }
    })
}

/// Whether `path` names the standard `#[test]` attribute: `test`, or a path to it through
/// `core` or `std`.
fn is_std_test(path: &syn::Path) -> bool {
    let idents: Vec<String> = path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    match idents.as_slice() {
        [only] => only == "test",
        [first, .., last] => last == "test" && (first == "core" || first == "std"),
        [] => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{generate, Kind, Options};

    /// The error `generate` gives for `function`, and the column it points at.
    fn refused(function: &str, kind: Kind) -> (String, usize) {
        let options = Options {
            workers: None,
            timeout_ms: 1_000,
        };
        let error = generate(options, syn::parse_str(function).unwrap(), kind)
            .err()
            .unwrap_or_else(|| panic!("`{function}` is accepted"));
        (error.to_string(), error.span().start().column)
    }

    /// A `const fn` was accepted and failed in the expansion, with rustc's "cannot call
    /// non-const function `fibra::__private::main`" pointing at the attribute.
    #[test]
    fn a_const_fn_is_refused_at_const() {
        for (kind, name) in [
            (Kind::Main, "#[fibra::main]"),
            (Kind::Test, "#[fibra::test]"),
        ] {
            assert_eq!(
                refused("const fn main() {}", kind),
                (
                    format!(
                        "{name} takes a plain `fn`, not a `const fn`: its body runs in a runtime \
                         it starts"
                    ),
                    0
                )
            );
        }
    }

    /// A second `#[test]` beside `#[fibra::test]` ran the test twice (rustc only warned).
    #[test]
    fn a_second_test_attribute_is_refused() {
        for attribute in [
            "#[test]",
            "#[::core::prelude::v1::test]",
            "#[std::prelude::v1::test]",
        ] {
            let (message, _) = refused(&format!("{attribute} fn twice() {{}}"), Kind::Test);
            assert_eq!(
                message,
                "#[fibra::test] adds `#[test]` itself: remove this one, which would run the test \
                 a second time"
            );
        }
        let options = Options {
            workers: None,
            timeout_ms: 1_000,
        };
        let other = syn::parse_str("#[should_panic] #[my::test] fn other() {}").unwrap();
        assert!(generate(options, other, Kind::Test).is_ok());
    }
}
