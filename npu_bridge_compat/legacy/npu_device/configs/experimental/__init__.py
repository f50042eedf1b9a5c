"""`npu_device.configs.experimental`: a namespace the adapter exports empty (its experimental options live in
`global_options().experimental`)."""
