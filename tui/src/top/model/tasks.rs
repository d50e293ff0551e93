//! The tasks the model has seen, each a number: what a pass over a million
//! batches compares instead of their task names (each its own string on the
//! heap, a cache miss a batch).

use std::collections::HashMap;

/// Task names and their numbers, in the order first seen. A number is never
/// given to another task.
#[derive(Default, Debug)]
pub struct Tasks {
    names: Vec<Box<str>>,
    ids: HashMap<Box<str>, u32>,
}

impl Tasks {
    /// The number of `name`, given now if it had none.
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// The number of `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    /// The name of number `id` (empty for a number never given).
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    /// How many tasks have a number.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Each number's rank among the names in their order (indexed by number).
    pub fn ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.names.len() as u32).collect();
        order.sort_unstable_by(|a, b| self.names[*a as usize].cmp(&self.names[*b as usize]));
        let mut rank = vec![0u32; order.len()];
        for (r, id) in order.iter().enumerate() {
            rank[*id as usize] = r as u32;
        }
        rank
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_and_ranks_follow_the_names() {
        let mut t = Tasks::default();
        assert_eq!((t.id("b"), t.id("a"), t.id("b"), t.id("c")), (0, 1, 0, 2));
        assert_eq!(t.get("a"), Some(1));
        assert_eq!(t.get("z"), None);
        assert_eq!(t.ranks(), vec![1, 0, 2]);
    }
}
