//! `examples/orders.toml`'s targets started through the real harness without load (see
//! `orders_targets`), then checked with plain HTTP requests: POST inserts, a duplicate id is a
//! 409, bad JSON a 400, GET reads the row back and `/orders/count` counts.

use crate::orders_targets::{http, start_orders};
use serde_json::json;

fn order(id: i64, item: &str, qty: i64, price_cents: i64) -> String {
    json!({"id": id, "item": item, "qty": qty, "price_cents": price_cents}).to_string()
}

#[test]
fn orders_targets_insert_refuse_duplicates_read_back_and_count() {
    let Some(orders) = start_orders() else {
        return;
    };
    let addr = orders.addr;
    assert_eq!(
        http(addr, "GET", "/orders/count", ""),
        (
            200,
            json!({"rows": 0, "min": null, "max": null, "distinct": 0})
        )
    );
    let posted = [
        (3, "book", 2, 1999),
        (1, "pen", 1, 100),
        (2, "lämp", 5, 9999),
    ];
    for (id, item, qty, price) in posted {
        let answer = http(addr, "POST", "/orders", &order(id, item, qty, price));
        assert_eq!(answer, (201, json!({"id": id})));
    }
    // The same id again, whatever the other fields: a 409 naming it, and nothing inserted.
    let answer = http(addr, "POST", "/orders", &order(1, "lamp", 3, 500));
    assert_eq!(answer, (409, json!({"error": "duplicate id 1"})));
    for bad in ["{\"id\":4,", "[1,2]", &order(4, "", 1, 1), "{\"id\":\"4\"}"] {
        let (status, body) = http(addr, "POST", "/orders", bad);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["error"].is_string(), "{bad}: {body}");
    }
    for (id, item, qty, price) in posted {
        let (status, row) = http(addr, "GET", &format!("/orders/{id}"), "");
        assert_eq!(status, 200, "{row}");
        let fields = ["id", "item", "qty", "price_cents"].map(|k| row[k].clone());
        assert_eq!(fields, [json!(id), json!(item), json!(qty), json!(price)]);
        assert!(row["created_at"].is_string(), "{row}");
    }
    assert_eq!(http(addr, "GET", "/orders/4", "").0, 404);
    assert_eq!(
        http(addr, "GET", "/orders/count", ""),
        (200, json!({"rows": 3, "min": 1, "max": 3, "distinct": 3}))
    );
    assert_eq!(http(addr, "GET", "/elsewhere", "").0, 404);
    assert_eq!(http(addr, "DELETE", "/orders/1", "").0, 405);
}
