//! Which request of a mix each send writes: a smooth weighted round-robin per worker (nginx's
//! upstream balancing): after every `sum of the weights` sends each request has had exactly
//! its share, and in between it stays within one or two requests of it, with no random numbers
//! and a few integer additions per send. A single-request load has no `Mix` at all.

use loadbench_plan::Endpoint;

/// A worker's picker over the requests of a mix.
pub struct Mix<'a> {
    endpoints: &'a [Endpoint],
    weights: Vec<i64>,
    current: Vec<i64>,
    total: i64,
}

impl<'a> Mix<'a> {
    /// A picker over `endpoints`; `None` when there is no mix (fewer than two requests).
    pub fn new(endpoints: &'a [Endpoint]) -> Option<Mix<'a>> {
        if endpoints.len() < 2 {
            return None;
        }
        let weights: Vec<i64> = endpoints.iter().map(|e| i64::from(e.weight)).collect();
        Some(Mix {
            endpoints,
            current: vec![0; weights.len()],
            total: weights.iter().sum(),
            weights,
        })
    }

    /// The next request to send: every request gains its weight, the one with the most
    /// (the first among equals) is picked and gives back the sum of the weights.
    #[inline]
    pub fn pick(&mut self) -> u16 {
        for (c, w) in self.current.iter_mut().zip(&self.weights) {
            *c += w;
        }
        let current = &self.current;
        let best = (1..current.len()).fold(0, |b, i| if current[i] > current[b] { i } else { b });
        self.current[best] -= self.total;
        best as u16
    }

    /// The rendered bytes of request `i`.
    #[inline]
    pub fn bytes(&self, i: u16) -> &'a [u8] {
        &self.endpoints[usize::from(i)].request.bytes
    }

    /// Whether request `i` is a HEAD (its responses have no body).
    #[inline]
    pub fn head(&self, i: u16) -> bool {
        self.endpoints[usize::from(i)].request.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadbench_plan::{RequestTemplate, Target};

    fn endpoints(weights: &[u32]) -> Vec<Endpoint> {
        let target = Target::parse("http://127.0.0.1:8080/").unwrap();
        weights
            .iter()
            .map(|&weight| Endpoint {
                url: target.url.clone(),
                weight,
                request: RequestTemplate::render(&target, "GET", &[], None, true).unwrap(),
            })
            .collect()
    }

    fn counts(weights: &[u32], picks: usize) -> Vec<usize> {
        let e = endpoints(weights);
        let mut mix = Mix::new(&e).unwrap();
        let mut n = vec![0; weights.len()];
        for _ in 0..picks {
            n[usize::from(mix.pick())] += 1;
        }
        n
    }

    #[test]
    fn each_cycle_of_the_weights_sum_gives_each_request_its_weight() {
        assert_eq!(counts(&[3, 1], 4), vec![3, 1]);
        assert_eq!(counts(&[3, 1], 400), vec![300, 100]);
        assert_eq!(counts(&[5, 3, 2], 1000), vec![500, 300, 200]);
        assert_eq!(counts(&[1, 1, 1], 7), vec![3, 2, 2]);
    }

    #[test]
    fn requests_interleave_instead_of_coming_in_runs() {
        let e = endpoints(&[3, 1]);
        let mut mix = Mix::new(&e).unwrap();
        let order: Vec<u16> = (0..8).map(|_| mix.pick()).collect();
        assert_eq!(order, vec![0, 0, 1, 0, 0, 0, 1, 0]);
        let e = endpoints(&[5, 1, 1]);
        let mut mix = Mix::new(&e).unwrap();
        let order: Vec<u16> = (0..7).map(|_| mix.pick()).collect();
        assert_eq!(order, vec![0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn for_a_few_requests_counts_stay_within_one_of_the_share_at_any_point() {
        let weights = [7u32, 2, 1];
        let e = endpoints(&weights);
        let mut mix = Mix::new(&e).unwrap();
        let mut n = [0f64; 3];
        for k in 1..=1000 {
            n[usize::from(mix.pick())] += 1.0;
            for (i, &w) in weights.iter().enumerate() {
                let share = k as f64 * f64::from(w) / 10.0;
                assert!((n[i] - share).abs() < 1.0 + 1e-9, "k={k} i={i} n={}", n[i]);
            }
        }
        assert!(Mix::new(&e[..1]).is_none());
    }
}
