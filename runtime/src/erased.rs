//! A value of a type known only to the code that stores and takes it, kept in a few words in
//! place (boxed when bigger): what a fiber's `Core` holds its entry closure and its result in,
//! so that a spawn allocates once.

use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// Machine words a value is kept in before it is boxed.
const INLINE_WORDS: usize = 4;

type Words = [usize; INLINE_WORDS];

/// Whether a `T` is kept in place rather than boxed: the one rule `new` and `take` share.
const fn fits<T>() -> bool {
    size_of::<T>() <= size_of::<Words>() && align_of::<T>() <= align_of::<Words>()
}

/// A type-erased value (see the module docs). Dropping it drops the value.
pub(crate) struct Erased {
    /// The value, or a `Box` of it.
    data: MaybeUninit<Words>,
    /// Drops what `data` holds.
    drop: unsafe fn(*mut u8),
    /// Neither `Send` nor `Sync`: whoever keeps one says for which values it may cross threads.
    _value: PhantomData<*mut ()>,
}

impl Erased {
    /// Keeps `value`.
    ///
    /// # Safety
    ///
    /// Whatever `T` borrows outlives the `Erased` (its `take` or its drop).
    pub(crate) unsafe fn new<T>(value: T) -> Erased {
        if fits::<T>() {
            // SAFETY: `T` fits, as just checked.
            unsafe { Erased::in_place(value) }
        } else {
            // SAFETY: a `Box` is one word.
            unsafe { Erased::in_place(Box::new(value)) }
        }
    }

    /// # Safety
    ///
    /// `V` fits (see `fits`).
    unsafe fn in_place<V>(value: V) -> Erased {
        let mut data = MaybeUninit::<Words>::uninit();
        // SAFETY: `data` is big and aligned enough for `V` (the caller's promise).
        unsafe { data.as_mut_ptr().cast::<V>().write(value) };
        Erased {
            data,
            drop: drop_in_place::<V>,
            _value: PhantomData,
        }
    }

    /// Gives the value back.
    ///
    /// # Safety
    ///
    /// `T` is the type it was made from.
    pub(crate) unsafe fn take<T>(self) -> T {
        let mut this = ManuallyDrop::new(self);
        let data = this.data.as_mut_ptr();
        // SAFETY: `data` holds a `T`, or a `Box<T>` when `T` does not fit (the rule `new`
        // followed); `this` is not dropped, so the value moved out is not dropped again.
        unsafe {
            if fits::<T>() {
                data.cast::<T>().read()
            } else {
                *data.cast::<Box<T>>().read()
            }
        }
    }
}

impl Drop for Erased {
    fn drop(&mut self) {
        // SAFETY: `data` holds the value `drop` was made for, not moved out (`take` consumes
        // the `Erased` without dropping it).
        unsafe { (self.drop)(self.data.as_mut_ptr().cast()) }
    }
}

/// # Safety
///
/// `data` holds a `V`, which is not used again.
unsafe fn drop_in_place<V>(data: *mut u8) {
    // SAFETY: per the contract.
    unsafe { data.cast::<V>().drop_in_place() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn a_small_value_and_a_big_one_come_back_whole() {
        // SAFETY: both own what they hold; each is taken as its own type.
        unsafe {
            assert_eq!(Erased::new(7u64).take::<u64>(), 7);
            let big = [3u64; 9];
            assert!(!fits::<[u64; 9]>());
            assert_eq!(Erased::new(big).take::<[u64; 9]>(), big);
        }
    }

    #[test]
    fn a_value_never_taken_is_dropped_once_in_place_or_boxed() {
        let counted = Rc::new(());
        let boxed_too = (counted.clone(), [0u64; 8]);
        // SAFETY: both own what they hold.
        let (small, big) = unsafe { (Erased::new(counted.clone()), Erased::new(boxed_too)) };
        assert_eq!(Rc::strong_count(&counted), 3);
        drop(small);
        drop(big);
        assert_eq!(Rc::strong_count(&counted), 1);
    }
}
