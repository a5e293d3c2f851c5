// edgelock config: the settings the other commands would use, one a line,
// each with where it came from, secrets masked. Nothing is contacted.
//
//   config = /etc/edgelock.conf  (default)
//   nodes = rediss://app:****@10.0.0.5:6380  (/etc/edgelock.conf:3)
//   ttl = 10s  (--ttl)
#include <cstdio>
#include <string>

#include "json_writer.hpp"
#include "options.hpp"

namespace edgelock_cli {

namespace {

// A setting's built-in default, as shown.
std::string default_text(setting s, const options& o) {
    switch (s) {
    case setting::nodes:
        return "redis://127.0.0.1:6379";
    case setting::tls:
    case setting::insecure:
    case setting::fencing:
        return "no";
    case setting::ttl:
        return "30s";
    case setting::wait:
    case setting::min_replicas:
        return "0";
    case setting::renew_every:
        return "ttl/3";
    case setting::grace:
        return "5s";
    case setting::max_hold:
        return "never";
    case setting::conflict_exit_code:
        return "1";
    case setting::tls_session_cache:
        return o.tls_session_cache.empty() ? "none" : o.tls_session_cache;
    default:
        return "";
    }
}

std::string value_text(setting s, const options& o) {
    const setting_origin& from = o.shown[s];
    if (from.from.empty()) {
        return default_text(s, o);
    }
    if (s == setting::password) {
        return "********";
    }
    return s == setting::nodes ? mask_passwords(from.text) : from.text;
}

std::string source_text(setting s, const options& o) {
    const setting_origin& from = o.shown[s];
    std::string text = from.from.empty() ? "default" : from.from;
    if (from.ignored) {
        text += s == setting::password || s == setting::password_file
                    ? "; overridden"
                    : "; ignored: no node uses TLS";
    }
    return text;
}

std::string config_text(const options& o) {
    return o.shown.config_file.empty() ? "none" : o.shown.config_file;
}

std::string config_source(const options& o) {
    const settings_shown& s = o.shown;
    return s.config_from +
           (!s.config_file.empty() && !s.config_found ? "; not found" : std::string());
}

}  // namespace

int config_command(const options& o) {
    if (o.json) {
        json_writer w;
        w.begin_object().key("config").begin_object().key("file");
        if (o.shown.config_file.empty()) {
            w.null();
        } else {
            w.string(o.shown.config_file);
        }
        w.key("from").string(o.shown.config_from).key("found").boolean(o.shown.config_found);
        w.end_object().key("settings").begin_array();
        for (unsigned i = 0; i < setting_count; ++i) {
            const setting s = static_cast<setting>(i);
            w.begin_object()
                .key("key")
                .string(setting_name(s))
                .key("value")
                .string(value_text(s, o));
            w.key("from").string(o.shown[s].from.empty() ? "default" : o.shown[s].from);
            w.key("ignored").boolean(o.shown[s].ignored).end_object();
        }
        w.end_array().end_object();
        std::printf("%s\n", w.text().c_str());
    } else {
        std::printf("config = %s  (%s)\n", config_text(o).c_str(), config_source(o).c_str());
        for (unsigned i = 0; i < setting_count; ++i) {
            const setting s = static_cast<setting>(i);
            std::printf("%s = %s  (%s)\n", setting_name(s), value_text(s, o).c_str(),
                        source_text(s, o).c_str());
        }
    }
    return std::fflush(stdout) == 0 ? exit_ok : exit_software;
}

}  // namespace edgelock_cli
