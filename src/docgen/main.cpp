// rlock-docgen FORMAT TEMPLATE OUTPUT: writes rlock(1) (man) or a shell's completion
// (bash, zsh, fish) from its template and the flag table. Run by the build; the results
// are checked in (see the generated_files test).
#include <fstream>
#include <iostream>
#include <sstream>

#include "docgen/model.hpp"

int main(int argc, char** argv) {
  using namespace rlock::docgen;
  if (argc != 4) {
    std::cerr << "usage: rlock-docgen man|bash|zsh|fish TEMPLATE OUTPUT\n";
    return 64;
  }
  std::string format = argv[1];
  std::ifstream in(argv[2]);
  if (!in) {
    std::cerr << "rlock-docgen: cannot read " << argv[2] << "\n";
    return 66;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    Model m = build_model();
    std::string out = format == "man"    ? man_page(m, text.str())
                      : format == "bash" ? bash_completion(m, text.str())
                      : format == "zsh"  ? zsh_completion(m, text.str())
                      : format == "fish" ? fish_completion(m, text.str())
                                         : throw std::runtime_error("unknown format " + format);
    std::ofstream file(argv[3]);
    file << out;
    if (!file.flush()) throw std::runtime_error(std::string("cannot write ") + argv[3]);
  } catch (const std::exception& e) {
    std::cerr << "rlock-docgen: " << e.what() << "\n";
    return 70;
  }
  return 0;
}
