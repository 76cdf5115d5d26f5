// Loads a configuration file as the gateway does (the local file checks left out) and prints, for
// schema_test.py, the keys each section reader knows, whatever the file sets ("key<TAB>READER<TAB>KEY",
// READER as named in messages: "server", "downstream 'a'.retry"), then each problem found
// ("error<TAB>LINE:COL: message"). Exit 0 when the configuration loads, 1 when it does not, 2 on bad use.

#include "gateway/config/config_loader.hpp"
#include "gateway/config/yaml_reader.hpp"

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: config_known_keys FILE\n";
    return 2;
  }
  gateway::yaml_reader::key_map keys;
  gateway::config_load_result result;
  {
    gateway::yaml_reader::known_keys_collector collector(keys);
    result = gateway::load_config_file(argv[1]);
  }
  for (const auto& [reader, names] : keys) {
    for (const auto& name : names) std::cout << "key\t" << reader << '\t' << name << '\n';
  }
  for (const auto& e : result.errors)
    std::cout << "error\t" << e.line << ':' << e.column << ": " << e.message << '\n';
  return result.config ? 0 : 1;
}
