//! Registered names.

use crate::{Pid, ProcessId};
use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// Name to process. Locked after a process's own lock, never before.
static NAMES: LazyLock<Mutex<HashMap<Arc<str>, ProcessId>>> = LazyLock::new(Default::default);

fn names() -> MutexGuard<'static, HashMap<Arc<str>, ProcessId>> {
    NAMES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why [`register`] refused.
///
/// ```
/// assert_eq!(
///     fibra::process::RegisterError::NameTaken.to_string(),
///     "the name is registered to another process"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// Another process has the name.
    NameTaken,
    /// The process already has a name.
    AlreadyNamed,
    /// The process has ended.
    Dead,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RegisterError::NameTaken => "the name is registered to another process",
            RegisterError::AlreadyNamed => "the process already has a registered name",
            RegisterError::Dead => "the process has ended",
        })
    }
}

impl Error for RegisterError {}

/// Why [`whereis`] found no process of the asked type.
///
/// ```
/// assert_eq!(
///     fibra::process::WhereisError::NotRegistered.to_string(),
///     "no process has the name"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WhereisError {
    /// No process has the name.
    NotRegistered,
    /// The process with the name takes another message type.
    WrongType,
}

impl fmt::Display for WhereisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WhereisError::NotRegistered => "no process has the name",
            WhereisError::WrongType => "the process with the name takes another message type",
        })
    }
}

impl Error for WhereisError {}

/// Registers `pid` under `name` (one name per process, one process per name). The name is
/// freed when the process ends, before its links and monitors are signalled, so whoever
/// hears of the end may register the name again. Names are shared by every runtime in the
/// OS process.
///
/// # Errors
///
/// [`RegisterError`]: the name is taken, the process already has a name, or it has ended.
///
/// ```
/// use fibra::process::{self as process, Inbox, RegisterError};
///
/// process::run(|inbox: Inbox<u8>| {
///     process::register("doc-register", inbox.pid()).unwrap();
///     assert_eq!(process::register("doc-register-2", inbox.pid()), Err(RegisterError::AlreadyNamed));
///     assert_eq!(process::whereis::<u8>("doc-register"), Ok(inbox.pid()));
///     assert!(process::registered().contains(&"doc-register".to_owned()));
/// });
/// ```
pub fn register(name: impl Into<String>, pid: impl Into<ProcessId>) -> Result<(), RegisterError> {
    let id = pid.into();
    let name: Arc<str> = Arc::from(name.into());
    let mut state = id.proc().core().lock();
    if state.reason.is_some() {
        return Err(RegisterError::Dead);
    }
    if state.name.is_some() {
        return Err(RegisterError::AlreadyNamed);
    }
    let mut names = names();
    if names.contains_key(&name) {
        return Err(RegisterError::NameTaken);
    }
    names.insert(name.clone(), id.clone());
    state.name = Some(name);
    Ok(())
}

/// Frees `name`; whether a process had it.
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// process::run(|inbox: Inbox<()>| {
///     process::register("doc-unregister", inbox.pid()).unwrap();
///     assert!(process::unregister("doc-unregister"));
///     assert!(!process::unregister("doc-unregister"));
/// });
/// ```
pub fn unregister(name: &str) -> bool {
    loop {
        let Some(id) = whereis_id(name) else {
            return false;
        };
        // The process's lock comes first; the entry may change before we hold it, then look
        // again.
        let mut state = id.proc().core().lock();
        if state.name.as_deref() != Some(name) {
            continue;
        }
        names().remove(name);
        state.name = None;
        return true;
    }
}

/// The process registered as `name`, typed.
///
/// # Errors
///
/// [`WhereisError::NotRegistered`], or [`WhereisError::WrongType`] when that process takes
/// messages of another type than `M`.
///
/// ```
/// use fibra::process::{self as process, Inbox, WhereisError};
///
/// process::run(|inbox: Inbox<u8>| {
///     process::register("doc-whereis", inbox.pid()).unwrap();
///     assert_eq!(process::whereis::<String>("doc-whereis"), Err(WhereisError::WrongType));
///     assert_eq!(process::whereis::<u8>("doc-nobody"), Err(WhereisError::NotRegistered));
/// });
/// ```
pub fn whereis<M: Send + 'static>(name: &str) -> Result<Pid<M>, WhereisError> {
    whereis_id(name)
        .ok_or(WhereisError::NotRegistered)?
        .downcast()
        .ok_or(WhereisError::WrongType)
}

/// The process registered as `name`, untyped.
///
/// ```
/// use fibra::process::{self as process, Inbox};
///
/// process::run(|inbox: Inbox<()>| {
///     process::register("doc-whereis-id", inbox.pid()).unwrap();
///     assert_eq!(process::whereis_id("doc-whereis-id"), Some(inbox.pid().id()));
/// });
/// ```
pub fn whereis_id(name: &str) -> Option<ProcessId> {
    names().get(name).cloned()
}

/// Every registered name, sorted.
///
/// ```
/// assert!(!fibra::process::registered().contains(&"never-registered".to_owned()));
/// ```
pub fn registered() -> Vec<String> {
    let mut all: Vec<String> = names().keys().map(|name| name.to_string()).collect();
    all.sort();
    all
}

/// Frees `name` if it still belongs to `id` (which holds its own lock and is ending).
pub(crate) fn release(name: &str, id: &ProcessId) {
    let mut names = names();
    if names.get(name) == Some(id) {
        names.remove(name);
    }
}
