//! Iterators over received values.

use crate::Reader;
use std::fmt;

/// Defines a public iterator that borrows a reader and gets each value with `$next`, so the
/// blocking and the non-blocking iterator differ only in how they ask for a value.
macro_rules! borrowing_iter {
    ($(#[$doc:meta])* $name:ident, |$reader:ident| $next:expr) => {
        $(#[$doc])*
        pub struct $name<'a, T> {
            reader: &'a Reader<T>,
        }

        impl<'a, T> $name<'a, T> {
            pub(crate) fn new(reader: &'a Reader<T>) -> Self {
                $name { reader }
            }
        }

        impl<T> Iterator for $name<'_, T> {
            type Item = T;

            // A blocking `next` records its caller (a `for` loop's line) as its wait site.
            #[track_caller]
            fn next(&mut self) -> Option<T> {
                let $reader = self.reader;
                $next
            }
        }

        impl<T> fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    };
}

borrowing_iter!(
    /// A blocking iterator over a reader's values, from [`Reader::iter`]; ends when the channel
    /// is closed and drained.
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(2);
    /// tx.send('a').unwrap();
    /// tx.send('b').unwrap();
    /// drop(tx);
    /// let mut iter: fibra::chan::Iter<'_, char> = rx.iter();
    /// assert_eq!(iter.next(), Some('a'));
    /// assert_eq!(iter.next(), Some('b'));
    /// assert_eq!(iter.next(), None);
    /// ```
    Iter,
    |reader| reader.recv()
);

borrowing_iter!(
    /// A non-blocking iterator over the values ready now, from [`Reader::try_iter`].
    ///
    /// ```
    /// let (tx, rx) = fibra::chan::bounded(2);
    /// tx.send(1).unwrap();
    /// let mut iter: fibra::chan::TryIter<'_, i32> = rx.try_iter();
    /// assert_eq!(iter.next(), Some(1));
    /// assert_eq!(iter.next(), None); // empty, though still open
    /// ```
    TryIter,
    |reader| reader.try_recv().ok()
);

/// A blocking iterator that owns its reader, from `Reader::into_iter`.
///
/// ```
/// let (tx, rx) = fibra::chan::bounded(2);
/// tx.send(1).unwrap();
/// drop(tx);
/// let iter: fibra::chan::IntoIter<i32> = rx.into_iter();
/// assert_eq!(iter.collect::<Vec<_>>(), [1]);
/// ```
pub struct IntoIter<T> {
    reader: Reader<T>,
}

impl<T> IntoIter<T> {
    pub(crate) fn new(reader: Reader<T>) -> Self {
        IntoIter { reader }
    }
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    #[track_caller]
    fn next(&mut self) -> Option<T> {
        self.reader.recv()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter").finish_non_exhaustive()
    }
}
