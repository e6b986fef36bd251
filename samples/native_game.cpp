// native_game: a small game loop on the C++ heap (new/delete, std::string, std::vector) for
// `heaprec run` to record. Read it in five minutes:
//
//   - levels: heapman_event("level_start") / ("level_end") bracket each level;
//   - frames: heapman_frame() once per frame;
//   - entities: spawned during a level, destroyed at its end;
//   - a texture cache that is never trimmed: it leaks across levels;
//   - per-frame temporary strings (churn);
//   - a second thread that builds path-finding grids in the background.
//
//   native_game [levels] [frames-per-level]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "heapman.h"

namespace {

struct Entity {
  int id;
  float x, y;
  std::string name;
  std::vector<int> inventory;
};

// Grows with every new texture name and is never trimmed: the leak to find.
std::map<std::string, std::vector<unsigned char>> gTextureCache;

const std::vector<unsigned char>& texture(const std::string& name) {
  auto it = gTextureCache.find(name);
  if (it == gTextureCache.end()) it = gTextureCache.emplace(name, std::vector<unsigned char>(4096)).first;
  return it->second;
}

std::unique_ptr<Entity> spawn(int id) {
  auto e = std::make_unique<Entity>();
  e->id = id;
  e->name = "enemy_" + std::to_string(id);
  e->inventory.resize(static_cast<size_t>(4 + id % 8));
  return e;
}

// Per-frame temporaries: a HUD line built and thrown away every frame.
size_t drawHud(int level, int frame, size_t entities) {
  std::string line = "level " + std::to_string(level) + " frame " + std::to_string(frame) +
                     " entities " + std::to_string(entities);
  std::vector<std::string> words;
  for (size_t at = 0; at < line.size();) {
    size_t sp = line.find(' ', at);
    if (sp == std::string::npos) sp = line.size();
    words.push_back(line.substr(at, sp - at));
    at = sp + 1;
  }
  return words.size();
}

void pathfinder(std::atomic<bool>& running, std::atomic<long>& grids) {
  while (running.load()) {
    std::vector<std::vector<int>> grid(32, std::vector<int>(32, 1));
    grids += static_cast<long>(grid.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int levels = argc > 1 ? std::atoi(argv[1]) : 3;
  int frames = argc > 2 ? std::atoi(argv[2]) : 200;
  std::atomic<bool> running{true};
  std::atomic<long> grids{0};
  std::thread worker(pathfinder, std::ref(running), std::ref(grids));

  size_t words = 0;
  for (int level = 1; level <= levels; ++level) {
    heapman_event_data("level_start", &level, sizeof level);
    std::vector<std::unique_ptr<Entity>> entities;
    for (int frame = 1; frame <= frames; ++frame) {
      heapman_frame();
      if (frame % 5 == 0) entities.push_back(spawn(level * 1000 + frame));
      if (frame % 50 == 0 && !entities.empty()) entities.erase(entities.begin());
      texture("level" + std::to_string(level) + "_tile" + std::to_string(frame % 40));
      words += drawHud(level, frame, entities.size());
    }
    entities.clear();
    heapman_event_data("level_end", &level, sizeof level);
  }
  running = false;
  worker.join();
  std::printf("native_game: %d levels, %zu HUD words, %zu cached textures\n", levels, words,
              gTextureCache.size());
  return 0;
}
