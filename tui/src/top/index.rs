//! Where each batch is in the model's list, by task and key. It holds
//! positions only: the task and key are read from the model itself (`names`,
//! a batch's position to its task and key), so a million batches do not keep
//! a second copy of each (about 130 bytes a batch as a
//! `HashMap<(String, String), usize>`).

use std::hash::BuildHasher;

use hashbrown::HashTable;

#[derive(Default)]
pub struct Index {
    table: HashTable<usize>,
    hasher: std::collections::hash_map::RandomState,
}

impl Index {
    fn hash(&self, task: &str, key: &str) -> u64 {
        self.hasher.hash_one((task, key))
    }

    /// Index batches `0..n`.
    pub fn build<'a>(n: usize, names: impl Fn(usize) -> (&'a str, &'a str)) -> Index {
        let mut ix = Index::default();
        ix.table.reserve(n, |_| 0);
        for i in 0..n {
            ix.insert(i, &names);
        }
        ix
    }

    /// The position of the batch (task, key).
    pub fn get<'a>(&self, names: impl Fn(usize) -> Option<(&'a str, &'a str)>, task: &str, key: &str) -> Option<usize> {
        let at = |&i: &usize| names(i).is_some_and(|(t, k)| t == task && k == key);
        self.table.find(self.hash(task, key), at).copied()
    }

    /// Index the batch at `i` (not indexed yet).
    pub fn insert<'a>(&mut self, i: usize, names: impl Fn(usize) -> (&'a str, &'a str)) {
        let (task, key) = names(i);
        let h = self.hash(task, key);
        let (hasher, table) = (&self.hasher, &mut self.table);
        table.insert_unique(h, i, |&j| hasher.hash_one(names(j)));
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
        let mut bs: Vec<(String, String)> = (0..50).map(|i| (format!("t/{}", i % 3), format!("{i:016x}"))).collect();
        let names = |bs: &[(String, String)], i: usize| -> (String, String) { bs[i].clone() };
        let mut ix = {
            let v = &bs;
            Index::build(v.len(), |i| (v[i].0.as_str(), v[i].1.as_str()))
        };
        let get = |ix: &Index, bs: &[(String, String)], t: &str, k: &str| {
            ix.get(|i| bs.get(i).map(|b| (b.0.as_str(), b.1.as_str())), t, k)
        };
        assert_eq!(ix.len(), 50);
        assert_eq!(get(&ix, &bs, "t/1", &format!("{:016x}", 7)), Some(7));
        assert_eq!(get(&ix, &bs, "t/2", &format!("{:016x}", 7)), None, "same key, other task");
        // swap_remove(7): the last batch moves to 7.
        let gone = bs.swap_remove(7);
        ix.moved(&gone.0, &gone.1, 7, None);
        let moved = names(&bs, 7);
        ix.moved(&moved.0, &moved.1, 49, Some(7));
        assert_eq!(get(&ix, &bs, "t/1", &format!("{:016x}", 7)), None);
        assert_eq!(get(&ix, &bs, "t/1", &format!("{:016x}", 49)), Some(7));
        assert_eq!(ix.len(), 49);
        bs.push(("t/9".into(), "ffffffffffffffff".into()));
        {
            let v = &bs;
            ix.insert(49, |i| (v[i].0.as_str(), v[i].1.as_str()));
        }
        assert_eq!(get(&ix, &bs, "t/9", "ffffffffffffffff"), Some(49));
        for (i, b) in bs.iter().enumerate() {
            assert_eq!(get(&ix, &bs, &b.0, &b.1), Some(i));
        }
    }
}
