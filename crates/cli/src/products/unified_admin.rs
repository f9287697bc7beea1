//! What `toolgate serve --http` answers on the product verbs' admin routes (`frontend::AdminVerbs`), for
//! `mcp-unified-gateway … --remote`: each verb is the local verb's own code run on the config the gateway was
//! started on (its file and workspace), so a remote `duplicate-preset` or `create-profile` writes the same
//! profile store and a remote `tool-events cleanup` deletes from the same reporting store as the local verb
//! would there. Profiles are read when the gateway starts: a profile stored this way is served after a restart.
//!
//! It holds no second copy of anything: the config is read again for each verb, as the local verb reads it.

use crate::products::unified::{self, Place};
use crate::products::{unified_events, unified_profiles};
use frontend::{AdminVerb, VerbRefusal};
use serde_json::{json, Value};
use std::sync::Mutex;

/// The product verbs of a gateway started on `place`'s config.
pub(crate) struct UnifiedVerbs {
    /// `None` when the gateway was started without a config file: the verbs that read one are refused.
    place: Option<Place>,
    /// Stored profiles are read, checked and written whole: one writer at a time.
    writing: Mutex<()>,
}

impl UnifiedVerbs {
    /// For a gateway started on `config`.
    pub(crate) fn new(config: &config::Config) -> Self {
        let place = config.source.clone().map(|file| Place {
            config: Some(file),
            workspace: crate::runtime::workspace(config).ok(),
        });
        Self {
            place,
            writing: Mutex::new(()),
        }
    }

    fn place(&self) -> Result<&Place, VerbRefusal> {
        self.place.as_ref().ok_or_else(|| {
            VerbRefusal::Refused(
                "this gateway was started without a config file, so it has no profile store or reporting \
                 settings of its own to act on"
                    .to_owned(),
            )
        })
    }

    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        let _one = self
            .writing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f()
    }
}

/// A verb that failed here: the reason, as the local verb would say it.
fn refused(e: &anyhow::Error) -> VerbRefusal {
    VerbRefusal::Refused(crate::runtime::error_chain(e))
}

impl frontend::AdminVerbs for UnifiedVerbs {
    fn answer(&self, verb: AdminVerb) -> Result<Value, VerbRefusal> {
        match verb {
            AdminVerb::ListPresets => Ok(Value::Object(config::unified_presets())),
            AdminVerb::PackageInfo => Ok(unified::package_info_value()),
            AdminVerb::ValidateConfig => {
                unified::check_config(self.place()?).map_err(|e| refused(&e))
            }
            AdminVerb::DuplicatePreset { id, profile_id } => {
                let place = self.place()?;
                self.write(|| unified_profiles::duplicate_at(place, &id, &profile_id))
                    .map_err(|e| refused(&e))?;
                Ok(json!({"stored": profile_id, "copy_of": id}))
            }
            AdminVerb::CreateProfile { profile } => {
                let place = self.place()?;
                let stored = self
                    .write(|| {
                        unified_profiles::create_at(
                            place,
                            Value::Object(profile),
                            "the profile sent",
                        )
                    })
                    .map_err(|e| refused(&e))?;
                Ok(json!({"stored": stored}))
            }
            AdminVerb::ToolEventsReport {
                group_by,
                since_ms,
                format,
            } => {
                let since = since_ms.map(store::Timestamp::from_millis);
                unified_events::report_at(self.place()?, &group_by, since, format.as_deref())
                    .map_err(|e| refused(&e))
            }
            AdminVerb::ToolEventsExport { since_ms, limit } => {
                let since = since_ms.map(store::Timestamp::from_millis);
                let (events, _) = unified_events::export_at(self.place()?, since, limit)
                    .map_err(|e| refused(&e))?;
                Ok(json!({"events": events}))
            }
            AdminVerb::ToolEventsCleanup {
                max_age_days,
                max_events,
            } => {
                let removed = unified_events::cleanup_at(self.place()?, max_age_days, max_events)
                    .map_err(|e| refused(&e))?;
                Ok(json!({"removed": removed}))
            }
        }
    }
}
