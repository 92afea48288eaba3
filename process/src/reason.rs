//! Why a process ended.

use std::fmt;

/// A process's exit reason, carried by exit signals, `Down` messages and error reports.
///
/// `Display` prints it the way OTP's `~p` prints the matching term (`normal`, `killed`,
/// `{panic,"boom"}`; a custom reason as given).
///
/// ```
/// use fibra::process::Reason;
/// assert_eq!(Reason::Killed.to_string(), "killed");
/// assert_eq!(Reason::Panic("boom".into()).to_string(), "{panic,\"boom\"}");
/// assert!(!Reason::Shutdown.is_normal());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The process's function returned.
    Normal,
    /// The untrappable kill signal (`exit(pid, Reason::Kill)`).
    Kill,
    /// The reason of a process ended by a kill signal.
    Killed,
    /// The process does not exist (a link or monitor to a dead process).
    Noproc,
    /// An orderly shutdown, as supervisors use.
    Shutdown,
    /// The process panicked with this message.
    Panic(String),
    /// Any other reason, printed as given.
    Custom(String),
}

impl Reason {
    /// Whether this is [`Reason::Normal`]: the only reason an untrapping linked process
    /// survives.
    ///
    /// ```
    /// assert!(fibra::process::Reason::Normal.is_normal());
    /// ```
    pub fn is_normal(&self) -> bool {
        matches!(self, Reason::Normal)
    }

    /// A custom reason.
    ///
    /// ```
    /// assert_eq!(fibra::process::Reason::custom("{bad,1}").to_string(), "{bad,1}");
    /// ```
    pub fn custom(reason: impl Into<String>) -> Reason {
        Reason::Custom(reason.into())
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Normal => f.write_str("normal"),
            Reason::Kill => f.write_str("kill"),
            Reason::Killed => f.write_str("killed"),
            Reason::Noproc => f.write_str("noproc"),
            Reason::Shutdown => f.write_str("shutdown"),
            Reason::Panic(message) => write!(f, "{{panic,{message:?}}}"),
            Reason::Custom(reason) => f.write_str(reason),
        }
    }
}
