//! `pactum._native`: the Python package's native half, a thin layer over
//! [`pactum::Client`] as the CLI is over the library. Values cross as JSON text (the
//! package's Python half turns them into dicts and its typed results), errors as
//! `NativeError(code, message, errors_json)`, which the Python half raises as the
//! `PactumError` subclass of the code's family. Every call releases the GIL while pactum
//! works, so threads sharing one client run side by side and `acall` never blocks an
//! event loop.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    _native,
    NativeError,
    PyException,
    "A pactum failure: (code, message, errors_json)."
);

/// The error of a pactum failure, for the Python half.
fn raise(e: &pactum::Error) -> PyErr {
    let errors = match e {
        pactum::Error::CallFailed { errors, .. } => serde_json::Value::Array(errors.clone()),
        other => serde_json::Value::Array(pactum::executor::call::error_entries(other)),
    };
    NativeError::new_err((e.code().as_str().to_string(), e.to_string(), errors.to_string()))
}

fn bad_json(e: serde_json::Error) -> PyErr {
    NativeError::new_err(("input_parse_error".to_string(), format!("input: {e}"), "[]".to_string()))
}

/// A project's contracts, callable from Python; shared by threads.
#[pyclass(frozen)]
struct NativeClient {
    client: pactum::Client,
}

#[pymethods]
impl NativeClient {
    /// `ledger`: "project" (the project's .pactum/ledger.jsonl), "none", or a file path.
    #[new]
    #[pyo3(signature = (root, provider=None, ledger="project", allow_draft=false))]
    fn new(
        py: Python<'_>,
        root: String,
        provider: Option<String>,
        ledger: &str,
        allow_draft: bool,
    ) -> PyResult<NativeClient> {
        let choice = match ledger {
            "project" => pactum::client::LedgerChoice::Project,
            "none" => pactum::client::LedgerChoice::None,
            path => pactum::client::LedgerChoice::Path(path.into()),
        };
        py.detach(|| {
            let mut builder =
                pactum::Client::builder(&root).ledger_choice(choice).allow_draft(allow_draft);
            if let Some(name) = provider {
                builder = builder.provider(name);
            }
            builder.build()
        })
        .map(|client| NativeClient { client })
        .map_err(|e| raise(&e))
    }

    /// One exchange; the input and the result as JSON text.
    fn call(&self, py: Python<'_>, pin: &str, input_json: &str) -> PyResult<String> {
        let input: serde_json::Value = serde_json::from_str(input_json).map_err(bad_json)?;
        let call = py.detach(|| self.client.call(pin, &input)).map_err(|e| raise(&e))?;
        Ok(serde_json::json!({
            "output": call.output,
            "contract_id": call.contract_id,
            "version": call.version,
            "usage": call.usage,
            "warnings": call.warnings,
            "ledger_seq": call.ledger_seq,
            "ledger_hash": call.ledger_hash,
            "provider": call.provider,
        })
        .to_string())
    }

    /// Runs the work order file at `path`; the result (`run --json`'s shape) as JSON.
    fn run(&self, py: Python<'_>, path: &str) -> PyResult<String> {
        let result = py.detach(|| self.client.run_file(path)).map_err(|e| raise(&e))?;
        serde_json::to_string(&result).map_err(|e| {
            NativeError::new_err(("internal_error".to_string(), e.to_string(), "[]".to_string()))
        })
    }

    /// Why the client runs offline (nothing named a provider), if it does.
    fn offline(&self) -> Option<String> {
        self.client.offline().map(str::to_string)
    }
}

/// `pactum validate PATHS...`: the report (`--format json`'s document) as JSON.
#[pyfunction]
fn validate(py: Python<'_>, paths: Vec<String>) -> PyResult<String> {
    let paths: Vec<std::path::PathBuf> = paths.into_iter().map(Into::into).collect();
    let report = py
        .detach(|| {
            let options = pactum::validate::ValidateOptions {
                names_from: std::env::current_dir().ok(),
                ..Default::default()
            };
            pactum::validate::paths::validate_paths(&paths, &options, &pactum::validate::NoProgress)
        })
        .map_err(|e| raise(&e))?;
    Ok(pactum::report::render(&report, pactum::report::Format::Json, &Default::default()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeClient>()?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
