//! What `pactum worker`, `submit` and `results` share: the `--queue`/`--stream` options and
//! opening the queue they name. The password comes from the URL or `PACTUM_QUEUE_PASSWORD`
//! (so it need not be on a command line other users can list) and is masked in everything
//! the process prints.

use pactum::Error;
use pactum::queue::redis::{RedisQueue, RedisUrl, Timeouts};

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
    /// The most time one queue command and its whole reply may take, however the server spreads it out (a blocking read adds its wait): 500ms, 10s, 1m.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub queue_timeout: std::time::Duration,
}

impl QueueArgs {
    /// The URL, checked, with its password (from `PACTUM_QUEUE_PASSWORD` when the URL has
    /// none) added to the process's redactor.
    pub fn url(&self) -> Result<RedisUrl, Error> {
        #[allow(clippy::disallowed_methods)] // --queue: the operator named the server
        let named = pactum::authority::Permit::flag(self.queue.clone());
        let mut url = RedisUrl::parse(&named).map_err(|message| Error::Usage { message })?;
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
        let timeouts = Timeouts { read: self.queue_timeout, ..Timeouts::default() };
        RedisQueue::open_within(url, &self.stream, &self.group, timeouts)
    }
}

pub use pactum::queue::parse_duration;
