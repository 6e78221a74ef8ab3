//! What `pactum worker`, `submit` and `results` share: the `--queue`/`--stream` options and
//! opening the queue they name. The password comes from the URL or `PACTUM_QUEUE_PASSWORD`
//! (so it need not be on a command line other users can list) and is masked in everything
//! the process prints.

use std::time::Duration;

use pactum::Error;
use pactum::queue::redis::{RedisQueue, RedisUrl};

use crate::output;

/// `--queue URL [--stream NAME] [--group NAME]`.
#[derive(Clone, Debug, clap::Args)]
pub struct QueueArgs {
    /// The queue: redis://[:PASSWORD@]HOST[:PORT][/DB] (or set PACTUM_QUEUE_PASSWORD).
    #[arg(long, value_name = "URL")]
    pub queue: String,
    /// The stream work orders go to; results go to NAME:results, dead letters to NAME:dead.
    #[arg(long, value_name = "NAME", default_value = "pactum")]
    pub stream: String,
    /// The consumer group workers share.
    #[arg(long, value_name = "NAME", default_value = "pactum-workers")]
    pub group: String,
}

impl QueueArgs {
    /// The URL, checked, with its password (from `PACTUM_QUEUE_PASSWORD` when the URL has
    /// none) added to the process's redactor.
    pub fn url(&self) -> Result<RedisUrl, Error> {
        let mut url = RedisUrl::parse(&self.queue).map_err(|message| Error::Usage { message })?;
        if url.password.is_none()
            && let Some(password) = output::env_lookup("PACTUM_QUEUE_PASSWORD")
        {
            url.password = Some(pactum::gateway::Secret::new(password));
        }
        if let Some(password) = &url.password {
            output::redactor().add(password.expose());
        }
        Ok(url)
    }

    /// One connection to the stream.
    pub fn open(&self, url: &RedisUrl) -> Result<RedisQueue, Error> {
        RedisQueue::open(url, &self.stream, &self.group)
    }
}

/// Parses a duration: `500ms`, `2s`, `1m`, `1h` (a whole number and its unit).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || {
        format!("`{text}` is not a duration; write a whole number and a unit: 500ms, 2s, 1m, 1h")
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    let duration = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(bad()),
    };
    if duration.is_zero() {
        return Err(format!("`{text}` is no time at all; give a duration above zero"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_the_units_people_write() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "2", "s", "1.5s", "-1s", "2 s", "2sec", "0s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
