//! With the `tracing` feature, every reload is a `tracing` event: `ConfigRejected` at WARN
//! with the field's path and the rule, `ConfigApplied` at INFO. Checked with a minimal
//! in-memory subscriber.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use resilix_config::{Config, Live};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

type Recorded = (Level, String, BTreeMap<String, String>);

#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Vec<Recorded>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Subscriber for Memory {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let entry = (*meta.level(), meta.target().to_owned(), fields);
        self.0.lock().unwrap().push(entry);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn rejections_warn_with_the_path_and_applications_inform() {
    let memory = Memory::default();
    tracing::subscriber::with_default(memory.clone(), || {
        let v1 = "[pipelines.p.bulkhead]\nmax_concurrent = 2\n";
        let live = Live::new(Config::from_toml_str(v1).unwrap()).unwrap();
        live.reload(Config::from_toml_str(
            "[pipelines.p.bulkhead]\nmax_concurrent = 0\n",
        ));
        live.reload(Config::from_toml_str(
            "[pipelines.p.bulkhead]\nmax_concurrent = 3\n",
        ));
    });
    let events = memory.0.lock().unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    let (level, target, fields) = &events[0];
    assert_eq!((*level, target.as_str()), (Level::WARN, "resilix_config"));
    assert_eq!(fields["event"], "ConfigRejected");
    assert_eq!(fields["path"], "pipelines.p.bulkhead.max_concurrent");
    assert!(
        fields["error"].contains("max_concurrent is 0"),
        "{fields:?}"
    );
    assert_eq!(fields["kept_generation"], "0");
    let (level, _, fields) = &events[1];
    assert_eq!(*level, Level::INFO);
    assert_eq!(fields["event"], "ConfigApplied");
    assert_eq!(
        (fields["generation"].as_str(), fields["changed"].as_str()),
        ("1", "1")
    );
}
