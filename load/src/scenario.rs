//! Scenarios: named steps of plain blocking code that every virtual user runs in a loop.

use std::fmt;

use crate::http::HttpError;
use crate::vu::Vu;

/// Why a step failed; counted as an error of the step.
#[derive(Debug)]
pub struct StepError(String);

impl StepError {
    /// A step error with a message.
    pub fn new(message: impl Into<String>) -> StepError {
        StepError(message.into())
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StepError {}

impl From<HttpError> for StepError {
    fn from(error: HttpError) -> StepError {
        StepError(error.to_string())
    }
}

impl From<std::io::Error> for StepError {
    fn from(error: std::io::Error) -> StepError {
        StepError(error.to_string())
    }
}

/// The closure of one step, as one VU owns it.
pub(crate) type StepFn = Box<dyn FnMut(&mut Vu) -> Result<(), StepError> + Send>;

/// Makes a VU's own copy of a step, so each VU's closure state is its own.
trait StepFactory: Send + Sync {
    fn instance(&self) -> StepFn;
}

impl<F> StepFactory for F
where
    F: FnMut(&mut Vu) -> Result<(), StepError> + Clone + Send + Sync + 'static,
{
    fn instance(&self) -> StepFn {
        Box::new(self.clone())
    }
}

/// A list of named steps; one iteration of a VU runs them all in order.
///
/// Each VU gets its own clone of every step closure, so state captured by value is per VU.
///
/// ```
/// use fibra_load::{Scenario, StepError};
/// let scenario = Scenario::new("browse")
///     .step("home", |vu| {
///         let _ = vu.index();
///         Ok(())
///     })
///     .step("fail", |_vu| Err(StepError::new("not today")));
/// assert_eq!(scenario.step_names(), ["home", "fail"]);
/// ```
pub struct Scenario {
    name: String,
    steps: Vec<(String, Box<dyn StepFactory>)>,
}

impl Scenario {
    /// An empty scenario.
    pub fn new(name: impl Into<String>) -> Scenario {
        Scenario {
            name: name.into(),
            steps: Vec::new(),
        }
    }

    /// Adds a step named `name`.
    pub fn step<F>(mut self, name: impl Into<String>, step: F) -> Scenario
    where
        F: FnMut(&mut Vu) -> Result<(), StepError> + Clone + Send + Sync + 'static,
    {
        self.steps.push((name.into(), Box::new(step)));
        self
    }

    /// The scenario's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The names of the steps, in order.
    pub fn step_names(&self) -> Vec<&str> {
        self.steps.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// One VU's copies of the steps.
    pub(crate) fn instances(&self) -> Vec<StepFn> {
        self.steps.iter().map(|(_, f)| f.instance()).collect()
    }
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("name", &self.name)
            .field("steps", &self.step_names())
            .finish()
    }
}
