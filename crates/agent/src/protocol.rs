//! The classic xxl-job executor protocol's messages, field for field (xxl-job 2.x to 3.4; see
//! the project's protocol notes). Kept in one place so the server, the job runner and the
//! registry loop cannot drift apart on a field name — `logDateTim` really has no final `e`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The admin's `/run` body (xxl-job's `TriggerParam`). Absent fields take their zero value:
/// compatible admins leave some out.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TriggerParam {
    /// The job's id in the admin.
    pub job_id: i64,
    /// The BEAN handler's name; this executor knows only `loadbench`.
    pub executor_handler: String,
    /// The `run` arguments of the load.
    pub executor_params: String,
    /// SERIAL_EXECUTION, DISCARD_LATER or COVER_EARLY.
    pub executor_block_strategy: String,
    /// Seconds; 0 means no limit.
    pub executor_timeout: i64,
    /// This trigger's log id: the callback and `/log` are keyed by it.
    pub log_id: i64,
    /// The trigger time in milliseconds, echoed as `logDateTim` in the callback.
    pub log_date_time: i64,
    /// BEAN, or one of the script and GLUE types this executor refuses.
    pub glue_type: String,
    /// The script of a GLUE job; never run here.
    pub glue_source: Option<String>,
    /// When the glue source changed.
    pub glue_updatetime: i64,
    /// This executor's position in the sharding broadcast.
    pub broadcast_index: i64,
    /// The number of executors in the broadcast; some admins send 0, meaning 1.
    pub broadcast_total: i64,
}

/// The body of `/kill`, `/beat` and `/idleBeat`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct JobIdParam {
    /// The job concerned.
    pub job_id: i64,
}

/// The body of `/log`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogParam {
    /// The trigger time cut to whole seconds; logs are keyed by `log_id` instead.
    pub log_date_tim: i64,
    /// Whose log.
    pub log_id: i64,
    /// The first line wanted, 1-based.
    pub from_line_num: i64,
}

/// One line of `/api/callback`'s array.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Callback {
    /// The trigger's log id.
    pub log_id: i64,
    /// The trigger's `logDateTime`, under the protocol's spelling.
    pub log_date_tim: i64,
    /// 200 success, 500 failure, 502 timeout.
    pub handle_code: u16,
    /// One line saying what happened.
    pub handle_msg: String,
}

/// Success: `{"code":200,"msg":null}`.
pub fn ok() -> Value {
    json!({"code": 200, "msg": null})
}

/// Success with a message, e.g. `/kill` of a job that is not running.
pub fn json_ok_msg(msg: &str) -> Value {
    json!({"code": 200, "msg": msg})
}

/// Failure with its reason: `{"code":500,"msg":…}`.
pub fn fail(msg: impl Into<String>) -> Value {
    json!({"code": 500, "msg": msg.into()})
}

/// The answer to a request with a missing or wrong `XXL-JOB-ACCESS-TOKEN`.
pub fn wrong_token() -> Value {
    fail("The access token is wrong.")
}

/// The body of `/api/registry` and `/api/registryRemove`.
pub fn registry(app_name: &str, address: &str) -> Value {
    json!({"registryGroup": "EXECUTOR", "registryKey": app_name, "registryValue": address})
}

/// `/log`'s answer: the payload under `data` (3.x) and `content` (2.x).
pub fn log_answer(from: i64, to: i64, content: &str, is_end: bool) -> Value {
    let payload = json!({
        "fromLineNum": from, "toLineNum": to, "logContent": content, "isEnd": is_end,
    });
    json!({"code": 200, "msg": null, "data": payload, "content": payload})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_reads_with_missing_fields_and_a_callback_keeps_the_protocol_spelling() {
        let t: TriggerParam = serde_json::from_str(
            r#"{"jobId":7,"executorHandler":"loadbench","logId":9,"logDateTime":5,"broadcastTotal":0}"#,
        )
        .unwrap();
        assert_eq!((t.job_id, t.log_id, t.broadcast_total), (7, 9, 0));
        let c = serde_json::to_value(Callback {
            log_id: 9,
            log_date_tim: 5,
            handle_code: 200,
            handle_msg: "ok".into(),
        })
        .unwrap();
        assert_eq!(c["logDateTim"], 5);
        assert_eq!(c["handleCode"], 200);
        assert_eq!(log_answer(1, 2, "a\n", true)["content"]["toLineNum"], 2);
    }
}
