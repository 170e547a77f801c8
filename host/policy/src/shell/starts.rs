//! Start lists: the word indices where a subcommand's command may begin once wrappers are
//! stripped. Nearly every command has one or two, so they are kept inline and only a long chain
//! of wrappers spills to the heap; every decision on a command line builds two per subcommand.

use std::ops::Deref;

const INLINE: usize = 3;

/// A short list of word indices, in the order pushed.
#[derive(Debug, Clone)]
pub(crate) enum Starts {
    Inline { len: u8, items: [usize; INLINE] },
    Heap(Vec<usize>),
}

impl Default for Starts {
    fn default() -> Self {
        Starts::Inline {
            len: 0,
            items: [0; INLINE],
        }
    }
}

impl Starts {
    /// The list of one start.
    pub(crate) fn one(s: usize) -> Starts {
        let mut out = Starts::default();
        out.push(s);
        out
    }

    pub(crate) fn push(&mut self, s: usize) {
        match self {
            Starts::Inline { len, items } => match items.get_mut(usize::from(*len)) {
                Some(slot) => {
                    *slot = s;
                    *len += 1;
                }
                None => {
                    let mut v = items.to_vec();
                    v.push(s);
                    *self = Starts::Heap(v);
                }
            },
            Starts::Heap(v) => v.push(s),
        }
    }
}

impl From<Vec<usize>> for Starts {
    fn from(v: Vec<usize>) -> Starts {
        if v.len() > INLINE {
            return Starts::Heap(v);
        }
        let mut out = Starts::default();
        for s in v {
            out.push(s);
        }
        out
    }
}

impl Deref for Starts {
    type Target = [usize];

    fn deref(&self) -> &[usize] {
        match self {
            Starts::Inline { len, items } => items.get(..usize::from(*len)).unwrap_or(&[]),
            Starts::Heap(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Starts;

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
    }
}
