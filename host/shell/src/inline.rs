//! Short lists kept inline: the word indices where a subcommand's command may begin once
//! wrappers are stripped, and the rule-index keys of a command line. Nearly every command has
//! one or two of each, and every decision on a command line builds them, so they live on the
//! stack or in place and only spill to the heap past `N` items.

use std::ops::Deref;

/// Word indices where a command may start.
pub(crate) type Starts = Inline<usize, 3>;

/// A list of up to `N` items inline, more on the heap, in the order pushed.
#[derive(Debug, Clone)]
pub struct Inline<T, const N: usize>(Repr<T, N>);

#[derive(Debug, Clone)]
enum Repr<T, const N: usize> {
    Inline { len: u8, items: [T; N] },
    Heap(Vec<T>),
}

impl<T: Copy + Default, const N: usize> Default for Inline<T, N> {
    fn default() -> Self {
        Inline(Repr::Inline {
            len: 0,
            items: [T::default(); N],
        })
    }
}

impl<T: Copy + Default, const N: usize> Inline<T, N> {
    /// The list of one item.
    pub fn one(item: T) -> Self {
        let mut out = Self::default();
        out.push(item);
        out
    }

    /// Appends `item`, moving the list to the heap when it outgrows `N`.
    pub fn push(&mut self, item: T) {
        match &mut self.0 {
            Repr::Inline { len, items } => match items.get_mut(usize::from(*len)) {
                Some(slot) => {
                    *slot = item;
                    *len += 1;
                }
                None => {
                    let mut v = items.to_vec();
                    v.push(item);
                    self.0 = Repr::Heap(v);
                }
            },
            Repr::Heap(v) => v.push(item),
        }
    }
}

impl<T: Copy + Default, const N: usize> From<Vec<T>> for Inline<T, N> {
    fn from(v: Vec<T>) -> Self {
        if v.len() > N {
            return Inline(Repr::Heap(v));
        }
        let mut out = Self::default();
        for item in v {
            out.push(item);
        }
        out
    }
}

impl<T, const N: usize> Deref for Inline<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            Repr::Inline { len, items } => items.get(..usize::from(*len)).unwrap_or(&[]),
            Repr::Heap(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Inline, Starts};

    #[test]
    fn keeps_order_inline_and_spilled() {
        let mut s = Starts::default();
        assert!(s.is_empty());
        for i in 0..6 {
            s.push(i * 2);
            assert_eq!(&*s, (0..=i).map(|j| j * 2).collect::<Vec<_>>().as_slice());
        }
        assert_eq!(&*Starts::from(vec![3, 1]), &[3, 1]);
        assert_eq!(&*Starts::from(vec![1, 2, 3, 4]), &[1, 2, 3, 4]);
        assert_eq!(&*Starts::one(7), &[7]);
        let mut keys: Inline<u64, 2> = Inline::default();
        for k in [5, 6, 7] {
            keys.push(k);
        }
        assert_eq!(&*keys, &[5, 6, 7]);
    }
}
