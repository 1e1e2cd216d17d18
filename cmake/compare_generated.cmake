# cmake -DGENERATED=dir -DSOURCE=dir -DFILES="a;b" -P compare_generated.cmake: fails, naming
# each, while a checked-in file differs from its fresh generation.
set(stale)
foreach(file ${FILES})
  get_filename_component(name ${file} NAME)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${GENERATED}/${name} ${SOURCE}/${file}
                  RESULT_VARIABLE different)
  if(different)
    list(APPEND stale ${file})
  endif()
endforeach()
if(stale)
  message(FATAL_ERROR "out of date with the flag table or their templates: ${stale}; run: "
                      "cmake --build build --target regenerate")
endif()
