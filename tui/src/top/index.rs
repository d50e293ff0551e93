//! Where each batch is in the model's list, by task and key. It holds
//! positions only: the task and key are read from the batches themselves, so
//! 100,000 batches do not keep a second copy of each (about 130 bytes a batch
//! as a `HashMap<(String, String), usize>`).

use std::hash::BuildHasher;

use hashbrown::HashTable;
use ubunye::state::Batch;

#[derive(Default)]
pub struct Index {
    table: HashTable<usize>,
    hasher: std::collections::hash_map::RandomState,
}

impl Index {
    fn hash(&self, task: &str, key: &str) -> u64 {
        self.hasher.hash_one((task, key))
    }

    /// Index every batch of `batches`.
    pub fn build(batches: &[Batch]) -> Index {
        let mut ix = Index::default();
        ix.table.reserve(batches.len(), |_| 0);
        for i in 0..batches.len() {
            ix.insert(batches, i);
        }
        ix
    }

    /// The position of the batch (task, key).
    pub fn get(&self, batches: &[Batch], task: &str, key: &str) -> Option<usize> {
        let at = |&i: &usize| batches.get(i).is_some_and(|b| b.task == task && b.key == key);
        self.table.find(self.hash(task, key), at).copied()
    }

    /// Index the batch at `i` (not indexed yet).
    pub fn insert(&mut self, batches: &[Batch], i: usize) {
        let b = &batches[i];
        let h = self.hash(&b.task, &b.key);
        let (hasher, table) = (&self.hasher, &mut self.table);
        table.insert_unique(h, i, |&j| hasher.hash_one((batches[j].task.as_str(), batches[j].key.as_str())));
    }

    /// The batch (task, key) is no longer at `from` but at `to` (or gone: None).
    pub fn moved(&mut self, task: &str, key: &str, from: usize, to: Option<usize>) {
        if let Ok(e) = self.table.find_entry(self.hash(task, key), |&i| i == from) {
            match to {
                Some(to) => *e.into_mut() = to,
                None => {
                    e.remove();
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_moves_and_forgets() {
        let mut bs: Vec<Batch> = (0..50).map(|i| Batch::new(&format!("t/{}", i % 3), &format!("{i:016x}"))).collect();
        let mut ix = Index::build(&bs);
        assert_eq!(ix.len(), 50);
        assert_eq!(ix.get(&bs, "t/1", &format!("{:016x}", 7)), Some(7));
        assert_eq!(ix.get(&bs, "t/2", &format!("{:016x}", 7)), None, "same key, other task");
        // swap_remove(7): the last batch moves to 7.
        let gone = bs.swap_remove(7);
        ix.moved(&gone.task, &gone.key, 7, None);
        ix.moved(&bs[7].task, &bs[7].key, 49, Some(7));
        assert_eq!(ix.get(&bs, "t/1", &format!("{:016x}", 7)), None);
        assert_eq!(ix.get(&bs, "t/1", &format!("{:016x}", 49)), Some(7));
        assert_eq!(ix.len(), 49);
        bs.push(Batch::new("t/9", "ffffffffffffffff"));
        ix.insert(&bs, 49);
        assert_eq!(ix.get(&bs, "t/9", "ffffffffffffffff"), Some(49));
        for (i, b) in bs.iter().enumerate() {
            assert_eq!(ix.get(&bs, &b.task, &b.key), Some(i));
        }
    }
}
