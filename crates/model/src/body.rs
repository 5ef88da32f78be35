//! Response body sizes: ab's "Document Length" and hey's "Size/request". The engine's parser
//! already counts each response's payload bytes (framing excluded); this keeps their total, the
//! smallest and the largest, so a report can give the mean and say when the size varied, in
//! three counters that merge exactly across workers, rounds and shards.

use serde::{Deserialize, Serialize};

/// Payload bytes of the complete responses counted in `requests`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodySizes {
    /// Body bytes of all complete responses (chunk framing and trailers excluded).
    pub total: u64,
    /// Smallest body of one response; 0 when there was none.
    pub min: u64,
    /// Largest body of one response.
    pub max: u64,
    /// Responses counted.
    pub responses: u64,
}

impl BodySizes {
    /// One complete response with `n` body bytes.
    #[inline]
    pub fn add(&mut self, n: u64) {
        self.min = if self.responses == 0 {
            n
        } else {
            self.min.min(n)
        };
        self.max = self.max.max(n);
        self.total = self.total.saturating_add(n);
        self.responses += 1;
    }

    /// Totals add, the extremes of the non-empty sides are kept: associative.
    pub fn merge(&mut self, o: &BodySizes) {
        if o.responses == 0 {
            return;
        }
        self.min = if self.responses == 0 {
            o.min
        } else {
            self.min.min(o.min)
        };
        self.max = self.max.max(o.max);
        self.total = self.total.saturating_add(o.total);
        self.responses += o.responses;
    }

    /// Mean body bytes per response; `None` with no response.
    pub fn mean(&self) -> Option<f64> {
        (self.responses > 0).then(|| self.total as f64 / self.responses as f64)
    }

    /// Whether responses had bodies of different sizes.
    pub fn varied(&self) -> bool {
        self.min != self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_variation_survive_a_merge_with_an_empty_side() {
        let (mut a, mut b) = (BodySizes::default(), BodySizes::default());
        a.add(1234);
        a.add(1234);
        assert_eq!((a.mean(), a.varied()), (Some(1234.0), false));
        b.merge(&a);
        b.merge(&BodySizes::default());
        assert_eq!(b, a);
        b.add(10);
        assert_eq!((b.min, b.max, b.responses), (10, 1234, 3));
        assert!(b.varied());
        assert_eq!(BodySizes::default().mean(), None);
    }
}
